"""Job rules on UPDATE, Volcano's `validateJobUpdate`: only scaling (replicas, minAvailable) and the
priority class may change; every other spec field that changes is named; the numbers still
hold."""

from __future__ import annotations

import pytest

from extender.admission.job_update import FIXED, check_update
from extender.admission.jobs import parse_job
from extender.admission.problems import Problem
from tests.builders import JobBuilder, make_job
from tests.unit.admission.helpers import by_path

INT32 = 2**31 - 1


def tf() -> JobBuilder:
    """The job as stored: defaults given, a policy, a volume and a plugin."""
    return (
        make_job("tf")
        .task("ps", 1, min_available=1, max_retry=3)
        .task("worker", 2, min_available=2, max_retry=3)
        .policy("PodEvicted", "RestartJob")
        .policy("TaskCompleted", "CompleteJob", task="worker")
        .plugin("svc")
        .volume("/data", claim_name="data")
        .queue("research")
        .scheduler_name("volcano")
        .max_retry(3)
        .min_available(3)
    )


def check(new: JobBuilder, old: JobBuilder | None = None) -> list[Problem]:
    body = new.build()
    job, problems = parse_job(body)
    assert job is not None, problems
    return check_update((old or tf()).build(), body, job)


@pytest.mark.parametrize(
    "new",
    [
        tf(),
        tf().set("spec.tasks[1].replicas", 8).min_available(9),
        tf().set("spec.tasks[1].replicas", 0).set("spec.tasks[1].minAvailable", 0).min_available(1),
        tf().set("spec.tasks[0].minAvailable", 0),
        tf().unset("spec.tasks[0].minAvailable"),
        tf().max_retry(0),
        tf().unset("spec.maxRetry"),
        tf().unset("spec.tasks[0].maxRetry"),
        tf().min_available(1),
        tf().priority_class("urgent"),
        tf().status(phase="Running").set("metadata.labels", {"team": "ml"}),
        tf().set("spec.tasks[0].template.spec.containers[0].resources.requests.cpu", "1000m"),
        tf().set("spec.tasks[0].template.spec.containers[0].resources.requests.cpu", 1),
        tf().set("spec.tasks[0].template.spec.containers[0].resources.requests.cpu", "0.001k"),
        tf().set("spec.tasks[1].template.spec.containers[0].resources.limits", {}),
    ],
    ids=[
        "unchanged",
        "scale-up",
        "scale-to-zero",
        "task-min-available",
        "task-min-available-unset",
        "max-retry-zero-is-the-default",
        "max-retry-unset-is-the-default",
        "task-max-retry-unset-is-the-default",
        "min-available",
        "priority-class",
        "metadata-and-status",
        "quantity-in-millicores",
        "quantity-as-number",
        "quantity-with-suffix",
        "empty-limits",
    ],
)
def test_allowed_changes(new: JobBuilder) -> None:
    assert check(new) == []


@pytest.mark.parametrize(
    ("new", "paths"),
    [
        (tf().queue("other"), ["spec.queue"]),
        (tf().unset("spec.queue"), ["spec.queue"]),
        (tf().max_retry(5), ["spec.maxRetry"]),
        (tf().max_retry(INT32), ["spec.maxRetry"]),
        (tf().set("spec.tasks[1].maxRetry", 10), ["spec.tasks[1].maxRetry"]),
        (tf().set("spec.tasks[0].maxRetry", 1), ["spec.tasks[0].maxRetry"]),
        (
            tf().set("spec.tasks[0].template.spec.containers[0].resources.requests.cpu", "2"),
            ["spec.tasks[0].template"],
        ),
        (
            tf().set("spec.tasks[0].template.spec.containers[0].resources.requests.cpu", "x"),
            ["spec.tasks[0].template"],
        ),
        (tf().scheduler_name("lahar"), ["spec.schedulerName"]),
        (
            tf().set("spec.tasks[0].template.spec.restartPolicy", "Always"),
            ["spec.tasks[0].template"],
        ),
        (tf().container("worker", "side"), ["spec.tasks[1].template"]),
        (tf().policy("PodFailed", "RestartJob"), ["spec.policies"]),
        (tf().set("spec.policies", []), ["spec.policies"]),
        (tf().policy("PodFailed", "AbortJob", task="ps"), ["spec.tasks[0].policies"]),
        (tf().set("spec.tasks[1].name", "workers"), ["spec.tasks[1].name"]),
        (tf().set("spec.tasks[1].dependsOn", {"name": ["ps"]}), ["spec.tasks[1].dependsOn"]),
        (tf().plugin("env"), ["spec.plugins"]),
        (tf().volume("/more", claim_name="more"), ["spec.volumes"]),
        (tf().ttl(60), ["spec.ttlSecondsAfterFinished"]),
        (tf().min_success(1), ["spec.minSuccess"]),
        (tf().set("spec.runningEstimate", "1h"), ["spec.runningEstimate"]),
        (tf().set("spec.futureField", True), ["spec.futureField"]),
        (
            tf().queue("other").scheduler_name("lahar").set("spec.tasks[0].name", "p"),
            ["spec.queue", "spec.schedulerName", "spec.tasks[0].name"],
        ),
    ],
    ids=[
        "queue",
        "queue-removed",
        "max-retry",
        "max-retry-int32",
        "task-max-retry",
        "task-max-retry-lowered",
        "quantity-changed",
        "quantity-unreadable",
        "scheduler-name",
        "template",
        "template-container",
        "policies-added",
        "policies-cleared",
        "task-policies",
        "task-name",
        "task-depends-on",
        "plugins",
        "volumes",
        "ttl",
        "min-success",
        "running-estimate",
        "unknown-field",
        "several",
    ],
)
def test_fixed_fields_are_named(new: JobBuilder, paths: list[str]) -> None:
    problems = check(new)
    assert [p.path for p in problems] == paths
    assert all(p.reason == FIXED for p in problems)


def test_fixed_reason_lists_what_may_change() -> None:
    assert "only minAvailable, priorityClassName and the tasks' replicas and minAvailable" in FIXED


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (tf().task("eval"), "tasks cannot be added or removed (2 before, 3 now)"),
        (
            tf().set("spec.tasks", tf().build()["spec"]["tasks"][:1]).min_available(1),
            "(2 before, 1 now)",
        ),
        (tf().set("spec.tasks", []).min_available(0), "(2 before, 0 now)"),
    ],
    ids=["added", "removed", "all-removed"],
)
def test_tasks_cannot_be_added_or_removed(new: JobBuilder, expected: str) -> None:
    found = by_path(check(new))
    assert list(found) == ["spec.tasks"]
    assert expected in found["spec.tasks"]


def test_a_task_added_is_named_once_not_per_field() -> None:
    problems = check(tf().task("eval").queue("other"))
    assert [p.path for p in problems] == ["spec.queue", "spec.tasks"]


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (
            tf().set("spec.tasks[1].replicas", 2**40),
            {"spec.tasks[1].replicas": "must be from 0 to 2147483647, got 1099511627776"},
        ),
        (
            tf().set("spec.tasks[1].minAvailable", 3),
            {"spec.tasks[1].minAvailable": "3 is more than the task's 2 replicas"},
        ),
        (
            tf().set("spec.tasks[1].replicas", 1).set("spec.tasks[1].minAvailable", 1),
            {"spec.minAvailable": "3 is more than the tasks' 2 replicas"},
        ),
        (tf().max_retry(-1), {"spec.maxRetry": "must be from 0 to 2147483647, got -1"}),
        (tf().max_retry(2**31), {"spec.maxRetry": "got 2147483648"}),
    ],
    ids=[
        "replicas-over-int32",
        "task-min-available-over-replicas",
        "job-min-available-over-replicas",
        "max-retry-negative",
        "max-retry-over-int32",
    ],
)
def test_numbers_on_update(new: JobBuilder, expected: dict[str, str]) -> None:
    found = by_path(check(new))
    assert set(found) == set(expected)
    for path, reason in expected.items():
        assert reason in found[path], found[path]


def test_numbers_and_fixed_fields_together() -> None:
    new = tf().min_available(10).queue("other").set("spec.tasks[0].minAvailable", 5)
    assert [p.path for p in check(new)] == [
        "spec.tasks[0].minAvailable",
        "spec.minAvailable",
        "spec.queue",
    ]


def test_an_old_object_without_spec_names_every_fixed_field() -> None:
    body = tf().build()
    job, _ = parse_job(body)
    assert job is not None
    problems = check_update({}, body, job)
    assert "spec.tasks" in [p.path for p in problems]
    assert "spec.queue" in [p.path for p in problems]


@pytest.mark.parametrize(
    ("old_spec", "paths"),
    [
        ({"tasks": "two tasks"}, ["spec.tasks"]),
        ({"tasks": {"ps": {}}}, ["spec.tasks"]),
        ({"tasks": [None, 5]}, ["spec.tasks[0].name", "spec.tasks[0].template"]),
        (5, ["spec.tasks"]),
    ],
    ids=["tasks-string", "tasks-object", "tasks-not-objects", "spec-int"],
)
def test_a_malformed_old_object_is_named_not_a_crash(old_spec: object, paths: list[str]) -> None:
    new = tf().unset("spec.policies").unset("spec.plugins").unset("spec.volumes")
    new.unset("spec.queue").unset("spec.schedulerName").unset("spec.tasks[1].policies")
    body = new.build()
    job, _ = parse_job(body)
    assert job is not None
    found = [p.path for p in check_update({"spec": old_spec}, body, job)]
    for path in paths:
        assert path in found


def test_a_job_stored_without_defaults_can_still_be_scaled() -> None:
    """Stored before the webhook ran: no queue, no maxRetry, no task minAvailable, no policies."""
    old = make_job("j").task("worker", 2).build()
    old["spec"].pop("policies")
    new = make_job("j").task("worker", 4).queue("default").max_retry(3).build()
    new["spec"]["tasks"][0]["minAvailable"] = 4
    job, problems = parse_job(new)
    assert job is not None and problems == []
    assert check_update(old, new, job, "lahar") == []


def test_an_update_that_keeps_the_spec_or_a_job_being_deleted_is_left_alone() -> None:
    """The garbage collector removing a finalizer must never be refused, even for a job the
    rules would refuse now."""
    old = make_job("j").task("Bad_Name", 1).build()
    relabelled = make_job("j").task("Bad_Name", 1).build()
    relabelled["metadata"]["labels"] = {"team": "ml"}
    job, _ = parse_job(relabelled)
    assert job is not None and check_update(old, relabelled, job) == []
    deleting = make_job("j").task("Bad_Name", 2).build()
    deleting["metadata"]["deletionTimestamp"] = "2026-11-23T15:00:00Z"
    job, _ = parse_job(deleting)
    assert job is not None and check_update(old, deleting, job) == []


def test_scaling_up_rechecks_the_pod_names_it_makes() -> None:
    name = "j" * 55  # svc: j...j-w-9 is 59 characters, j...j-w-999999 is 64
    old = make_job(name).task("w", 10).plugin("svc").build()
    new = make_job(name).task("w", 1_000_000).plugin("svc").build()
    job, _ = parse_job(new)
    assert job is not None
    assert [p.path for p in check_update(old, new, job)] == ["spec.tasks[0].name"]
