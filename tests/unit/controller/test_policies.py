"""Lifecycle policies: the events a job's pods show, and the action its policies ask for."""

from __future__ import annotations

import logging

import pytest

from extender.api.batch import Action, Event, Job, JobPod
from extender.controller.policies import (
    Decision,
    Seen,
    Trigger,
    decide,
    observe,
    pending_timeout,
    resolve,
)
from tests.builders import JobBuilder, make_job, make_job_pod

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z: when the builders' pods were created


def tf() -> JobBuilder:
    return make_job("tf").task("ps", 1).task("worker", 2).min_available(3)


def failed(task: str = "worker", exit_code: int | None = 3) -> Trigger:
    return Trigger(Event.POD_FAILED, task, exit_code=exit_code)


def with_task_retry(job: Job, task: str, max_retry: int) -> Job:
    tasks = [
        t.model_copy(update={"max_retry": max_retry}) if t.name == task else t
        for t in job.spec.tasks
    ]
    return job.model_copy(update={"spec": job.spec.model_copy(update={"tasks": tasks})})


def by_name(*pods: JobPod) -> dict[str, JobPod]:
    return {p.name: p for p in pods}


@pytest.mark.parametrize(
    ("job", "trigger", "expected"),
    [
        (
            tf()
            .policy("PodFailed", "RestartJob")
            .policy("PodFailed", "RestartTask", task="worker"),
            failed(),
            Action.RESTART_TASK,
        ),
        (
            tf()
            .policy("PodFailed", "RestartJob")
            .policy(action="RestartPod", exit_code=3, task="worker"),
            failed(),
            Action.RESTART_POD,
        ),
        (
            tf()
            .policy(action="RestartPod", exit_code=3, task="worker")
            .policy("PodFailed", "AbortJob", task="worker"),
            failed(),
            Action.ABORT_JOB,
        ),
        (
            tf().policy(action="RestartPod", exit_code=3).policy("PodFailed", "AbortJob"),
            failed(),
            Action.ABORT_JOB,
        ),
        (tf().policy(action="RestartJob", exit_code=3), failed(), Action.RESTART_JOB),
        (tf().policy(action="RestartJob", exit_code=3), failed(exit_code=1), None),
        (tf().policy(action="RestartJob", exit_code=3, task="ps"), failed(), None),
        (tf().policy("*", "AbortJob"), Trigger(Event.UNKNOWN, "ps"), Action.ABORT_JOB),
        (
            tf().policy("PodFailed", "RestartJob").policy("*", "RestartTask", task="worker"),
            failed(),
            Action.RESTART_TASK,
        ),
        (tf().policy("PodEvicted", "RestartJob"), failed(), None),
    ],
    ids=[
        "a task's event policy before the job's",
        "a task's exit code policy before the job's event policy",
        "within a task, event policies before exit code ones",
        "within the job, event policies before exit code ones",
        "the job's exit code policy",
        "another exit code: no match",
        "another task's exit code policy does not apply",
        "* matches any event",
        "a task's * comes before the job's policies (Volcano's order)",
        "nothing matches: the default",
    ],
)
def test_resolve_order(job: JobBuilder, trigger: Trigger, expected: Action | None) -> None:
    assert resolve(job.model(), trigger) is expected


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (tf().policy("*", "AbortJob"), None),
        (tf().policy("PodPending", "RestartPod"), None),
        (tf().policy("PodPending", "RestartPod", timeout="1m"), Action.RESTART_POD),
        (tf().policy("PodPending", "RestartPod", timeout="1m", task="ps"), None),
    ],
    ids=[
        "* never means pending a while",
        "PodPending needs its timeout",
        "PodPending with a timeout",
        "another task's PodPending policy",
    ],
)
def test_pod_pending_matches_only_its_own_policy(job: JobBuilder, expected: Action | None) -> None:
    assert resolve(job.model(), Trigger(Event.POD_PENDING, "worker")) is expected


def test_an_unknown_action_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    job = tf().policy("PodFailed", "Explode").model()
    with caplog.at_level(logging.WARNING):
        assert resolve(job, failed()) is None
    assert "unknown action 'Explode'" in caplog.text


def test_a_task_policy_with_an_unknown_action_leaves_the_job_policy_to_answer() -> None:
    job = tf().policy("PodFailed", "RestartJob").policy("PodFailed", "Explode", task="worker")
    assert resolve(job.model(), failed()) is Action.RESTART_JOB


def test_pending_timeout_is_the_shortest_valid_one() -> None:
    job = tf().policy("PodPending", "RestartPod", timeout="2m").policy("*", "AbortJob")
    job = job.policy("PodPending", "RestartPod", timeout="90s", task="worker")
    job = job.policy("PodPending", "RestartPod", timeout="soon", task="ps")
    model = job.model()
    ps, worker = model.spec.tasks
    assert (pending_timeout(model, ps), pending_timeout(model, worker)) == (120.0, 90.0)
    assert pending_timeout(tf().model(), ps) is None


@pytest.mark.parametrize(
    ("max_retry", "restarts", "expected"),
    [
        (0, (4, 0), True),
        (0, (3, 0), False),
        (0, (2, 2), True),
        (1, (2, 0), True),
        (1, (1, 0), False),
        (-1, (100, 100), False),
    ],
    ids=[
        "maxRetry unset means 3: 4 restarts fail the task",
        "maxRetry unset means 3: 3 restarts do not",
        "restarts add up over the task's pods",
        "more than the task's maxRetry",
        "exactly the task's maxRetry is not more",
        "maxRetry -1: never",
    ],
)
def test_task_failed_when_restarts_exceed_max_retry(
    max_retry: int, restarts: tuple[int, int], expected: bool
) -> None:
    job = with_task_retry(tf().status(phase="Running").model(), "worker", max_retry)
    found = by_name(
        make_job_pod(job, "ps", 0).model(),
        *(make_job_pod(job, "worker", i).restarts(n).model() for i, n in enumerate(restarts)),
    )
    seen = observe(job, found, [], NOW)
    assert (Trigger(Event.TASK_FAILED, "worker") in seen.triggers) is expected


def test_restarts_of_finished_pods_do_not_count() -> None:
    job = tf().status(phase="Running").model()
    restarted = make_job_pod(job, "worker", 0).restarts(9).model()
    done = restarted.model_copy(
        update={"status": restarted.status.model_copy(update={"phase": "Failed"})}
    )
    events = [t.event for t in observe(job, by_name(done), [], NOW).triggers]
    assert Event.TASK_FAILED not in events


def test_observe_lists_events_in_the_order_policies_are_consulted() -> None:
    builder = make_job("j").task("a", 1).task("b", 1).task("c", 1).task("d", 2)
    job = (
        builder.policy("PodPending", "RestartPod", timeout="1m", task="c").status(version=1).model()
    )
    evicted = make_job_pod(job, "a", 0).terminating().model()
    found = by_name(
        make_job_pod(job, "b", 0).phase("Failed", exit_code=2).model(),
        make_job_pod(job, "c", 0).phase("Pending").model(),
        make_job_pod(job, "d", 0).phase("Unknown").model(),
        make_job_pod(job, "d", 1).phase("Succeeded").version(0).model(),  # older version: unseen
    )
    seen = observe(job, found, [evicted], NOW + 60)
    assert [(t.event, t.task) for t in seen.triggers] == [
        (Event.POD_EVICTED, "a"),
        (Event.POD_FAILED, "b"),
        (Event.UNKNOWN, "d"),
        (Event.POD_PENDING, "c"),
    ]
    assert seen.triggers[1].exit_code == 2
    assert seen.triggers[0].pod == evicted


def test_observe_task_completed_and_what_it_does_not_see() -> None:
    job = tf().status(version=1).model()
    found = by_name(
        make_job_pod(job, "ps", 0).phase("Failed").terminating().model(),  # going: no PodFailed
        make_job_pod(job, "worker", 0).phase("Succeeded").model(),
        make_job_pod(job, "worker", 1).phase("Succeeded").model(),
    )
    old = make_job_pod(job, "ps", 0).version(0).terminating().model()
    seen = observe(job, found, [old], NOW)
    assert seen == Seen([Trigger(Event.TASK_COMPLETED, "worker")], None)


def test_decide_takes_the_first_trigger_a_policy_answers() -> None:
    job = tf().policy("Unknown", "AbortJob").model()
    first, answered = failed(), Trigger(Event.UNKNOWN, "ps")
    assert decide(job, Seen([first, answered], None)) == Decision(Action.ABORT_JOB, answered)
    assert decide(job, Seen([first], None)) == Decision(Action.SYNC_JOB)


def test_a_trigger_describes_itself() -> None:
    pod = make_job_pod(tf().model(), "worker", 1).model()
    assert Trigger(Event.POD_FAILED, "worker", pod, 3).describe() == (
        "PodFailed on pod tf-worker-1 (exit code 3)"
    )
    assert Trigger(Event.TASK_COMPLETED, "worker").describe() == "TaskCompleted on task worker"
