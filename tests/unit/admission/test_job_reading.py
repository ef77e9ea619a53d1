"""Reading a Job for the rules: wrong types and hostile values are problems at their field, never
exceptions; and dependsOn cycles are found exactly when there is one."""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.admission.jobs import parse_job
from extender.admission.problems import Problem
from tests.builders import make_job
from tests.unit.admission.helpers import check, tf

INT32 = 2**31 - 1


@pytest.mark.parametrize(
    ("path", "value", "expected_path", "reason"),
    [
        ("spec.tasks[0].replicas", "two", "spec.tasks[0].replicas", "valid integer, got 'two'"),
        ("spec.tasks[0].replicas", -1, "spec.tasks[0].replicas", "greater than or equal to 0"),
        ("spec.tasks[0].replicas", 1.0, "spec.tasks[0].replicas", "valid integer, got 1.0"),
        ("spec.tasks[0].replicas", True, "spec.tasks[0].replicas", "valid integer, got True"),
        ("spec.tasks[0].replicas", None, "spec.tasks[0].replicas", "valid integer, got None"),
        ("spec.tasks[0].minAvailable", -1, "spec.tasks[0].minAvailable", "greater than or equal"),
        ("spec.tasks[0].name", 5, "spec.tasks[0].name", "valid string, got 5"),
        ("spec.tasks[0].template", "pod", "spec.tasks[0].template", "valid dictionary"),
        ("spec.tasks", {"w": {}}, "spec.tasks", "valid list"),
        ("spec.minAvailable", -1, "spec.minAvailable", "greater than or equal to 0"),
        ("spec.maxRetry", "3", "spec.maxRetry", "valid integer, got '3'"),
        ("spec.queue", ["a"], "spec.queue", "valid string, got a list of 1 item"),
        ("spec.plugins.svc", 5, "spec.plugins.svc", "valid list, got 5"),
        ("spec.plugins.svc", [1], "spec.plugins.svc[0]", "valid string, got 1"),
        ("spec.volumes", [{"mountPath": 5}], "spec.volumes[0].mountPath", "valid string"),
        ("spec.policies", [{"timeout": 90}], "spec.policies[0].timeout", "valid string, got 90"),
        ("metadata.name", 7, "metadata.name", "valid string"),
        ("spec", None, "spec", "valid dictionary"),
    ],
    ids=[
        "replicas-string",
        "replicas-negative",
        "replicas-float",
        "replicas-bool",
        "replicas-null",
        "min-available-negative",
        "task-name-int",
        "template-string",
        "tasks-object",
        "job-min-available-negative",
        "max-retry-string",
        "queue-list",
        "plugin-args-int",
        "plugin-arg-int",
        "mount-path-int",
        "timeout-int",
        "name-int",
        "spec-null",
    ],
)
def test_wrong_types_are_problems_at_the_field(
    path: str, value: Any, expected_path: str, reason: str
) -> None:
    job, problems = parse_job(tf().set(path, value).build())
    assert job is None
    assert [p.path for p in problems] == [expected_path]
    assert reason in problems[0].reason, problems[0].reason


def test_parse_job_reports_every_type_error_at_once() -> None:
    builder = (
        tf()
        .set("spec.tasks[0].replicas", "one")
        .set("spec.tasks[1].template", [])
        .set("spec.maxRetry", 1.5)
        .set("spec.plugins", {"svc": "x"})
    )
    job, problems = parse_job(builder.build())
    assert job is None
    assert [p.path for p in problems] == [
        "spec.tasks[0].replicas",
        "spec.tasks[1].template",
        "spec.plugins.svc",
        "spec.maxRetry",
    ]


@pytest.mark.parametrize("obj", [None, "job", [1, 2]], ids=["none", "string", "list"])
def test_no_job_object(obj: Any) -> None:
    assert parse_job(obj) == (None, [Problem("", "the request carries no Job object")])


def test_parse_job_ignores_status_and_unknown_fields() -> None:
    body = tf().status(phase="Running", retryCount="lots").set("spec.futureField", {"x": 1}).build()
    job, problems = parse_job(body)
    assert problems == []
    assert job is not None
    assert job.status.retry_count == 0


def test_hostile_values_make_short_problems() -> None:
    builder = (
        make_job("a")
        .task("w")
        .plugin("x" * 100_000)
        .plugin("pytorch", "--port", "9" * 100_000)
        .queue("q" * 100_000)
        .volume("/d", claim_name="c" * 100_000)
    )
    problems, _ = check(builder)
    assert len(problems) == 4
    assert all(len(p.reason) < 300 for p in problems if "plugins" not in p.path)


NAMES = ["a", "b", "c", "d", "e"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([*NAMES, "ghost"]), max_size=3, unique=True),
        min_size=1,
        max_size=len(NAMES),
    )
)
def test_a_cycle_is_found_exactly_when_there_is_one(needs: list[list[str]]) -> None:
    builder = make_job("dag")
    for name, depends_on in zip(NAMES, needs, strict=False):
        builder.task(name, depends_on=depends_on)
    known = set(NAMES[: len(needs)])
    graph = {
        name: [n for n in depends_on if n in known]
        for name, depends_on in zip(NAMES, needs, strict=False)
    }
    try:
        tuple(TopologicalSorter(graph).static_order())
        cyclic = False
    except CycleError:
        cyclic = True
    found = [p for p in check(builder)[0] if p.path == "spec.tasks"]
    assert bool(found) == cyclic
    if found:
        # The cycle named is one: each task named waits on the next.
        cycle = found[0].reason.split("(")[1].split(")")[0].split(" -> ")
        assert cycle[0] == cycle[-1]
        for task, following in pairwise(cycle):
            assert following in graph[task]
