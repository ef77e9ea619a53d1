"""Problems as values: paths written as kubectl writes them, values quoted clipped, pydantic's
errors turned into problems at the field, and one denial message that lists them all (capped)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from extender.admission.jobs import parse_job
from extender.admission.problems import (
    CLIP,
    LONGEST,
    SHOWN,
    AdmissionDecision,
    Problem,
    denial_message,
    field,
    from_validation,
    pointer,
    shown,
)
from extender.api.batch import Job
from extender.api.scheduling import Queue
from tests.builders import make_job, make_queue


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        ((), ""),
        (("spec",), "spec"),
        (("spec", "tasks", 1, "minAvailable"), "spec.tasks[1].minAvailable"),
        (("spec", "tasks", 0, "policies", 2), "spec.tasks[0].policies[2]"),
        (("spec.tasks", 3), "spec.tasks[3]"),
        ((0, "name"), "[0].name"),
    ],
    ids=["empty", "one", "nested", "ends-in-index", "dotted-head", "index-first"],
)
def test_field_writes_paths_as_kubectl_does(loc: tuple[str | int, ...], expected: str) -> None:
    assert field(*loc) == expected


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        (("spec", "queue"), "/spec/queue"),
        (("spec", "tasks", 0, "name"), "/spec/tasks/0/name"),
        (("metadata", "annotations", "a/b~c"), "/metadata/annotations/a~1b~0c"),
        ((), ""),
    ],
    ids=["plain", "index", "escaped", "root"],
)
def test_pointer_is_rfc6901(loc: tuple[str | int, ...], expected: str) -> None:
    assert pointer(*loc) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", "'abc'"),
        ("", "''"),
        (7, "7"),
        (-3, "-3"),
        (True, "True"),
        (None, "None"),
        (1.5, "1.5"),
        (10**17, str(10**17)),
        (10**18, "a 19-digit number"),
        (-(10**40), "a 41-digit number"),
        ({"a": 1, "b": 2}, "an object of 2 fields"),
        ({"a": 1}, "an object of 1 field"),
        ([1, 2, 3], "a list of 3 items"),
        ([], "a list of 0 items"),
    ],
    ids=[
        "string-quoted",
        "empty-string",
        "int",
        "negative",
        "bool",
        "none",
        "float",
        "big-but-shown",
        "huge",
        "huge-negative",
        "dict",
        "dict-of-one",
        "list",
        "empty-list",
    ],
)
def test_shown_quotes_values_briefly(value: Any, expected: str) -> None:
    assert shown(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("x" * 10_000, None),
        ("é" * 500, None),
        (10 ** (10**4), "a number of about 10001 digits"),  # str() would refuse it
        (-(10 ** (10**4)), "a number of about 10001 digits"),
    ],
    ids=["long", "unicode", "huge-int", "huge-negative-int"],
)
def test_shown_never_exceeds_the_clip(value: Any, expected: str | None) -> None:
    text = shown(value)
    assert len(text) <= CLIP
    if expected is not None:
        assert text == expected


def test_shown_clips_long_strings_with_an_ellipsis() -> None:
    text = shown("x" * 1000)
    assert text == "'" + "x" * (CLIP - 4) + "..."
    assert len(text) == CLIP


def test_problem_text_and_decision() -> None:
    assert str(Problem("spec.queue", "required")) == "spec.queue: required"
    assert str(Problem("", "not a Job")) == "not a Job"
    assert AdmissionDecision().allowed
    assert AdmissionDecision(
        patch=({"op": "add", "path": "/spec/queue", "value": "default"},)
    ).allowed
    assert not AdmissionDecision((Problem("", "no"),)).allowed


def test_describe_lists_every_problem_under_the_object() -> None:
    problems = [Problem("spec.tasks", "required"), Problem("", "queue 'q' does not exist")]
    assert denial_message("Job ns/a", problems) == (
        "Job ns/a is invalid: spec.tasks: required; queue 'q' does not exist"
    )


@pytest.mark.parametrize(
    ("count", "more"),
    [(1, None), (SHOWN, None), (SHOWN + 1, 1), (SHOWN + 37, 37)],
    ids=["one", "exactly-shown", "one-more", "many-more"],
)
def test_describe_caps_the_list(count: int, more: int | None) -> None:
    problems = [Problem(f"spec.tasks[{i}].name", "bad") for i in range(count)]
    message = denial_message("Job ns/a", problems)
    assert message.count(": bad") == min(count, SHOWN)
    assert f"spec.tasks[{min(count, SHOWN) - 1}].name" in message
    assert f"spec.tasks[{SHOWN}].name" not in message
    if more is None:
        assert "more" not in message
    else:
        assert message.endswith(f"; and {more} more")


def test_describe_keeps_a_hostile_problem_short() -> None:
    hostile = Problem("spec.plugins." + "x" * 100_000, "y" * 100_000)
    message = denial_message("Job ns/a", [hostile] * (SHOWN + 5))
    assert len(message) <= len("Job ns/a is invalid: ") + SHOWN * (LONGEST + 2) + 20
    assert message.endswith("...; and 5 more")
    fits = Problem("spec.queue", "z" * (LONGEST - len("spec.queue: ")))
    assert denial_message("Job ns/a", [fits]).endswith("z" * 10)


def errors_of(model: type[Job] | type[Queue], body: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body, strict=True)
    return caught.value


@pytest.mark.parametrize(
    ("path", "value", "expected_path", "reason"),
    [
        ("spec.plugins.svc", 5, "spec.plugins.svc", "valid list, got 5"),
        ("spec.plugins", ["svc"], "spec.plugins", "valid dictionary"),
        ("spec.tasks[0].replicas", "two", "spec.tasks[0].replicas", "valid integer, got 'two'"),
        ("spec.tasks[0].minAvailable", "1", "spec.tasks[0].minAvailable", "got '1'"),
        ("spec.tasks[0].dependsOn", {"name": "a"}, "spec.tasks[0].dependsOn.name", "valid list"),
        (
            "spec.tasks[0].dependsOn",
            {"name": [], "iteration": 2},
            "spec.tasks[0].dependsOn.iteration",
            "valid string, got 2",
        ),
        ("spec.policies", [{"events": "PodFailed"}], "spec.policies[0].events", "valid list"),
        ("spec.policies", [{"exitCode": "1"}], "spec.policies[0].exitCode", "valid integer"),
        ("spec.volumes", [{"volumeClaim": []}], "spec.volumes[0].volumeClaim", "dictionary"),
        ("spec.runningEstimate", 5, "spec.runningEstimate", "valid string"),
        ("spec.ttlSecondsAfterFinished", -1, "spec.ttlSecondsAfterFinished", "greater than"),
        ("spec.minSuccess", 0, "spec.minSuccess", "greater than or equal to 1"),
        ("spec.tasks[0].template", None, "spec.tasks[0].template", "valid dictionary"),
        ("metadata.labels", {"a": 1}, "metadata.labels.a", "valid string"),
        ("spec", [], "spec", "valid dictionary"),
    ],
    ids=[
        "plugin-args-int",
        "plugins-list",
        "replicas-string",
        "min-available-string",
        "depends-on-string",
        "depends-on-iteration",
        "events-string",
        "exit-code-string",
        "volume-claim-list",
        "nullable-string",
        "ttl-negative",
        "min-success-zero",
        "template-null",
        "label-int",
        "spec-list",
    ],
)
def test_from_validation_names_the_field(
    path: str, value: Any, expected_path: str, reason: str
) -> None:
    body = make_job("a").task("w").set(path, value).build()
    problems = from_validation(errors_of(Job, body))
    assert [p.path for p in problems] == [expected_path]
    assert reason in problems[0].reason
    assert "list[str]" not in problems[0].path


@pytest.mark.parametrize(
    ("value", "wrong"),
    [(5, "5"), ("svc", "'svc'"), ({"a": 1}, "an object of 1 field"), (True, "True")],
    ids=["int", "string", "object", "bool"],
)
def test_union_fields_have_no_branch_names_in_their_path(value: Any, wrong: str) -> None:
    problems = from_validation(errors_of(Job, make_job("a").set("spec.plugins.svc", value).build()))
    assert [p.path for p in problems] == ["spec.plugins.svc"]
    for problem in problems:
        assert not any(tag in problem.path for tag in ("list[str]", "none", "[", "str"))
        assert f"got {wrong}" in problem.reason


def test_from_validation_prefixes_and_deduplicates() -> None:
    problems = from_validation(errors_of(Job, {"spec": {"tasks": [{"replicas": "x"}]}}), "object")
    assert problems == [
        Problem("object.spec.tasks[0].replicas", "Input should be a valid integer, got 'x'")
    ]


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (["x"] * 1000, "got a list of 1000 items"),
        ({"a": "x" * 10_000}, "got an object of 1 field"),
        (10**30, "got a 31-digit number"),
        (1.5, "got 1.5"),
    ],
    ids=["long-list", "big-object", "huge-int", "float"],
)
def test_from_validation_describes_the_value_briefly(value: Any, got: str) -> None:
    problems = from_validation(errors_of(Job, make_job("a").set("spec.queue", value).build()))
    assert problems == [Problem("spec.queue", f"Input should be a valid string, {got}")]


def test_bad_quantity_names_the_resource_once() -> None:
    body = make_queue("q").capability(cpu="lots").build()
    [problem] = from_validation(errors_of(Queue, body))
    assert problem.path == "spec.capability"
    assert problem.reason.startswith("cpu: invalid quantity 'lots'")
    assert "Value error" not in problem.reason
    assert "got an object" not in problem.reason


def test_hostile_quantity_makes_a_short_problem() -> None:
    body = make_queue("q").set("spec.capability", {"cpu": {"a": "x" * 100_000}}).build()
    problems = from_validation(errors_of(Queue, body))
    assert [p.path for p in problems] == ["spec.capability"]
    assert problems[0].reason.startswith("cpu: invalid quantity {'a': 'xxx")
    assert len(problems[0].reason) <= LONGEST


def test_parse_job_reads_strictly_and_reports_every_type_error() -> None:
    body = (
        make_job("a")
        .task("w")
        .task("ps")
        .set("spec.tasks[0].replicas", "two")
        .set("spec.tasks[1].minAvailable", 1.0)
        .set("spec.maxRetry", "3")
        .build()
    )
    job, problems = parse_job(body)
    assert job is None
    assert [p.path for p in problems] == [
        "spec.tasks[0].replicas",
        "spec.tasks[1].minAvailable",
        "spec.maxRetry",
    ]
