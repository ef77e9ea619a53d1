"""Reconcile: what makes a job impossible to run (the webhook's own rules, for a job created
without it), and how the pods are seen before planning."""

from __future__ import annotations

import pytest

from extender.controller.reconcile import problems
from extender.controller.store import JobStore
from tests.builders import JobBuilder, make_job, make_job_pod


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (make_job("j").task("a", 1).task("b", 2).plugin("env").plugin("svc"), []),
        (make_job("j"), ["spec.tasks: required: at least one task"]),
        (make_job("j").task("a", 1).task("", 1), ["spec.tasks[1].name: required"]),
        (
            make_job("j").task("a", 1).task("b", 1).task("a", 1),
            ["spec.tasks[2].name: a is the name of spec.tasks[0] too"],
        ),
        (
            make_job("j").task("", 1).task("", 1),
            ["spec.tasks[0].name: required", "spec.tasks[1].name: required"],
        ),
        (
            make_job("j").task("a", 1).plugin("env").plugin("horovod"),
            [
                "spec.plugins.horovod: unknown plugin "
                "(known: env, svc, ssh, pytorch, tensorflow, mpi, ray, hcclrank)"
            ],
        ),
        (
            make_job("j").task("a", 1).plugin("svc", "--no-such-flag"),
            ["spec.plugins.svc: unknown argument --no-such-flag (known: "],
        ),
        (
            make_job("j").task("launcher", 1).plugin("mpi").plugin("svc").plugin("ssh"),
            ["spec.plugins.mpi: no task is named 'master': the mpi master task (--master)"],
        ),
        (
            make_job("j").plugin("nope"),
            ["spec.tasks: required: at least one task", "spec.plugins.nope: unknown plugin"],
        ),
    ],
    ids=[
        "a valid job has none",
        "no tasks",
        "an empty task name",
        "a duplicate task name",
        "two empty names: each told, not as duplicates",
        "an unknown plugin",
        "an unknown plugin argument",
        "a task a plugin needs is missing",
        "every problem is told at once",
    ],
)
def test_problems_name_their_field(job: JobBuilder, expected: list[str]) -> None:
    found = problems(job.model())
    assert len(found) == len(expected), found
    for message, start in zip(found, expected, strict=True):
        assert message.startswith(start)


def test_a_pod_the_controller_deleted_counts_as_terminating_before_the_watch_says_so() -> None:
    """Else a failed pod deleted by RestartPod would be seen failing, and retried, again."""
    store = JobStore()
    job = make_job("a").task("w", 1).model()
    failed = make_job_pod(job, "w", 0).phase("Failed", exit_code=1).model()
    store.upsert_pod(failed)
    assert not store.pods_of(job)[failed.name].terminating
    store.expect_deletion(failed.metadata.uid)
    assert store.pods_of(job)[failed.name].terminating
