"""Reconcile: what makes a job impossible to run (the webhook's own rules, for a job created
without it), and how the pods are seen before planning."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from extender.api.batch import Action
from extender.api.job_groups import build_pod_group
from extender.controller.lifecycle import plan
from extender.controller.reconcile import GROUP_PHASES, Reconciler, problems
from extender.controller.store import JobStore, OwnedGroup
from tests.builders import JobBuilder, make_job, make_job_pod

NOW = 1_767_225_600.0


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


@pytest.mark.parametrize(
    "action", [Action.RESTART_JOB, Action.RESTART_TASK, Action.RESTART_POD], ids=lambda a: a.value
)
def test_a_restart_keeps_the_pod_group_as_it_is(action: Action) -> None:
    """The pods go and come back; the PodGroup is neither deleted nor applied again (so the
    scheduler keeps the gang it knows, uid and status)."""
    builder = make_job("a").task("w", 2).min_available(2).policy("PodFailed", action.value)
    job = builder.status(phase="Running").model()
    found = {
        p.name: p
        for p in (
            make_job_pod(job, "w", 0).phase("Failed", exit_code=1).model(),
            make_job_pod(job, "w", 1).model(),
        )
    }
    result = plan(job, found, [], NOW)
    assert result.decision.action is action and result.delete
    store = JobStore()
    store.upsert_group(OwnedGroup.model_validate(build_pod_group(job)))
    restarted = job.model_copy(update={"status": result.status})
    work = Reconciler(k8s.ApiClient(), store)._prepare(restarted, result)
    assert (result.phase in GROUP_PHASES, work.owned, work.plan.delete_job) == (True, [], False)


@pytest.mark.parametrize(
    ("pods", "counted_ago", "waits"),
    [
        (["Running", "Pending"], 0.2, True),  # only the counts moved, written a moment ago
        (["Running", "Pending"], 1.5, False),  # not written lately
        (["Running", "Running"], 0.2, False),  # minAvailable run: a new phase, at once
        (["Running"], 0.2, False),  # a pod to create
    ],
    ids=["counts", "counts-later", "new-phase", "to-create"],
)
def test_a_status_that_moves_only_counts_is_written_at_most_once_a_second(
    pods: list[str], counted_ago: float, waits: bool
) -> None:
    job = make_job("a").task("w", 2).min_available(2).status(phase="Pending").model()
    found = {
        p.name: p
        for index, phase in enumerate(pods)
        for p in [make_job_pod(job, "w", index).phase(phase).model()]
    }
    result = plan(job, found, [], NOW)
    reconciler = Reconciler(k8s.ApiClient(), JobStore())
    reconciler._counted[job.key] = 100.0 - counted_ago
    wait = reconciler._counts_wait(job, result, now=100.0)
    assert (wait is not None) is waits
