"""The job's phase machine: from a job and its pods to the pods to make and delete, the status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from extender.api.batch import Action, Job, JobPod, JobStatus
from extender.controller.lifecycle import (
    MAX_CONDITIONS,
    POD_CREATE_FAILED,
    PODS_CREATED,
    Plan,
    count,
    plan,
    pods_created,
    refused,
    refused_since,
)
from tests.builders import JobBuilder, JobPodBuilder, make_job, make_job_pod

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z: when the builders' pods were created
R, S, F, P = "Running", "Succeeded", "Failed", "Pending"  # pod phases, for short tables


def tf(min_available: int = 3) -> JobBuilder:
    """The TensorFlow shape: pods ps-0, worker-0, worker-1."""
    return make_job("tf").task("ps", 1).task("worker", 2).min_available(min_available)


def pod(job: Job, short: str, phase: str = R) -> JobPodBuilder:
    task, index = short.rsplit("-", 1)
    return make_job_pod(job, task, int(index)).phase(phase)


def pods(job: Job, phases: Mapping[str, str], *more: JobPodBuilder) -> dict[str, JobPod]:
    """The job's pods: `{"worker-0": S}` at the job's version, then `more` as built."""
    made = [pod(job, short, phase) for short, phase in phases.items()]
    return {p.name: p for p in (b.model() for b in [*made, *more])}


def tf_pods(job: Job, *phases: str, more: Iterable[JobPodBuilder] = ()) -> dict[str, JobPod]:
    return pods(job, dict(zip(("ps-0", "worker-0", "worker-1"), phases, strict=False)), *more)


def step(
    job: Job, found: Mapping[str, JobPod], evicted: Iterable[JobPod] = (), at: float = 0
) -> Plan:
    return plan(job, found, list(evicted), NOW + at)


def created(result: Plan) -> list[str]:
    return [f"{task.name}-{index}" for task, index in result.create]


def deleted(result: Plan) -> list[str]:
    return sorted(p.name.split("-", 1)[1] for p in result.delete)


def test_a_new_job_enters_pending_and_creates_every_pod() -> None:
    result = step(tf().model(), {})
    assert (result.phase, result.status.state.reason) == ("Pending", "Created")
    assert created(result) == ["ps-0", "worker-0", "worker-1"]
    assert [(c.status, c.last_transition_time) for c in result.status.conditions] == [
        ("Pending", "2026-01-01T00:00:00Z")
    ]
    assert (result.delete, result.delete_job, result.requeue_after) == ([], False, None)


def task_min(min_available: int) -> JobBuilder:
    """TensorFlow with worker minAvailable 2 (task minimums sum to 3)."""
    job = make_job("tf").task("ps", 1).task("worker", 2, min_available=2)
    return job.min_available(min_available)


@pytest.mark.parametrize(
    ("job", "phase", "found", "expected", "reason"),
    [
        (tf(), "Pending", (R, P, P), "Pending", ""),
        (tf(), "Pending", (R, S, F), "Running", "MinAvailableReached"),
        (tf(), "Running", (S, S, S), "Completed", "Completed"),
        (tf(), "Running", (R, S, S), "Running", ""),
        (tf(), "Running", (S, S, F), "Failed", "Failed"),
        (task_min(3), "Running", (S, S, F), "Failed", "TaskFailed"),
        (task_min(2), "Running", (S, S, F), "Completed", "Completed"),
        (tf(1).min_success(3), "Running", (S, S, F), "Failed", "MinSuccessNotReached"),
    ],
    ids=[
        "pending while fewer than minAvailable started",
        "running+succeeded+failed reach minAvailable: running",
        "every pod succeeded: completed",
        "a pod still runs: running",
        "all finished, fewer than minAvailable succeeded: failed",
        "all finished, a task short of its minAvailable: failed",
        "task minimums ignored when job minAvailable is below their sum",
        "all finished short of minSuccess: failed",
    ],
)
def test_sync_moves_the_phase(
    job: JobBuilder, phase: str, found: tuple[str, ...], expected: str, reason: str
) -> None:
    model = job.status(phase=phase).model()
    result = step(model, tf_pods(model, *found))
    assert (result.phase, result.status.state.reason) == (expected, reason)
    assert (result.delete, result.create) == ([], [])


def test_min_success_reached_completes_and_kills_the_rest() -> None:
    job = tf(1).min_success(2).status(phase="Running").model()
    result = step(job, tf_pods(job, R, S, S))
    assert (result.phase, result.status.state.reason) == ("Completed", "MinSuccessReached")
    assert deleted(result) == ["ps-0"]


def test_task_completed_complete_job_kills_the_rest_then_completes() -> None:
    job = tf().policy("TaskCompleted", "CompleteJob", task="worker").status(phase="Running")
    first = step(job.model(), tf_pods(job.model(), R, S, S))
    assert (first.phase, first.decision.action) == ("Completing", Action.COMPLETE_JOB)
    assert deleted(first) == ["ps-0"]  # finished pods are kept for their logs

    completing = tf().status(state={"phase": "Completing", "reason": "CompleteJob"}).model()
    going = step(completing, tf_pods(completing, R, S, S))
    assert (going.phase, deleted(going)) == ("Completing", ["ps-0"])
    workers = {"worker-0": S, "worker-1": S}
    waiting = step(completing, pods(completing, workers, pod(completing, "ps-0").terminating()))
    assert (waiting.phase, waiting.delete) == ("Completing", [])
    done = step(completing, pods(completing, workers))
    assert (done.phase, done.status.state.reason) == ("Completed", "CompleteJob")


def test_abort_job_keeps_finished_pods_until_aborted() -> None:
    job = tf().policy("PodFailed", "AbortJob").status(phase="Running").model()
    result = step(job, tf_pods(job, R, F, S))
    assert (result.phase, deleted(result)) == ("Aborting", ["ps-0"])

    aborting = tf().status(phase="Aborting").model()
    assert step(aborting, tf_pods(aborting, R, F, S)).phase == "Aborting"
    aborted = step(aborting, pods(aborting, {"worker-0": F, "worker-1": S}))
    assert (aborted.phase, aborted.delete) == ("Aborted", [])


def test_an_eviction_with_restart_job_restarts_at_the_next_version() -> None:
    job = tf().policy("PodEvicted", "RestartJob").status(phase="Running", version=1).model()
    evicted = pod(job, "worker-1").terminating()
    result = step(job, tf_pods(job, R, S, more=[evicted]), [evicted.model()])
    assert (result.phase, result.decision.action) == ("Restarting", Action.RESTART_JOB)
    assert (result.status.version, result.status.retry_count) == (2, 1)
    assert deleted(result) == ["ps-0", "worker-0"]  # finished too; the evicted one is going


def test_an_eviction_of_an_older_version_is_ignored() -> None:
    job = tf().policy("PodEvicted", "RestartJob").status(phase="Running", version=1).model()
    old = pod(job, "worker-1").version(0).terminating().model()
    result = step(job, tf_pods(job, R, R), [old])
    assert (result.phase, result.decision.action) == ("Running", Action.SYNC_JOB)
    assert (result.status.version, result.delete) == (1, [])


def test_a_namesakes_pods_going_are_no_eviction_and_not_the_jobs() -> None:
    """Job tf deleted and made again at once (another uid): the old pods, still terminating,
    count for nothing, their deletion is no PodEvicted, and the new job makes its own pods."""
    job = tf().policy("PodEvicted", "TerminateJob").model()
    old = [
        pod(job, short).owned_by("uid-of-the-old-tf").terminating()
        for short in ("ps-0", "worker-0")
    ]
    result = step(job, {}, [o.model() for o in old])
    assert (result.phase, result.decision.action) == ("Pending", Action.SYNC_JOB)
    assert created(result) == ["ps-0", "worker-0", "worker-1"]


def test_restart_job_at_max_retry_fails_the_job() -> None:
    job = tf().policy("PodEvicted", "RestartJob").status(phase="Running", retryCount=2).model()
    found = tf_pods(job, R, S, R)
    result = step(job, found, [found["tf-worker-1"]])
    assert (result.phase, result.status.state.reason) == ("Failed", "MaxRetryExceeded")
    assert (result.status.retry_count, result.status.version) == (3, 0)
    assert deleted(result) == ["ps-0", "worker-1"]


@pytest.mark.parametrize(
    ("retries", "old", "expected", "killed"),
    [
        (1, "running", "Restarting", ["ps-0"]),
        (1, "terminating", "Restarting", []),
        (1, None, "Pending", []),
        (3, None, "Failed", []),
    ],
    ids=[
        "an old pod left is deleted, still restarting",
        "an old pod still terminating: wait",
        "no old pod left: pending again",
        "retryCount reached maxRetry: failed",
    ],
)
def test_restarting(retries: int, old: str | None, expected: str, killed: list[str]) -> None:
    job = tf().status(phase="Restarting", version=1, retryCount=retries).model()
    olds = {"running": pod(job, "ps-0").version(0)}
    olds["terminating"] = pod(job, "ps-0").version(0).terminating()
    result = step(job, pods(job, {}, *([olds[old]] if old else [])))
    assert (result.phase, deleted(result), result.create) == (expected, killed, [])


def test_restart_pod_deletes_that_pod_and_counts_a_retry() -> None:
    job = tf().policy("PodFailed", "RestartPod").status(phase="Running").model()
    result = step(job, tf_pods(job, R, F, R))
    assert (result.phase, result.decision.action) == ("Running", Action.RESTART_POD)
    assert (deleted(result), result.status.retry_count) == (["worker-0"], 1)
    assert created(step(job, pods(job, {"ps-0": R, "worker-1": R}))) == ["worker-0"]


def test_restart_task_deletes_the_tasks_pods() -> None:
    job = tf().policy("PodFailed", "RestartTask", task="worker").status(phase="Running").model()
    result = step(job, tf_pods(job, R, F, S))
    assert (result.decision.action, result.status.retry_count) == (Action.RESTART_TASK, 1)
    assert deleted(result) == ["worker-0", "worker-1"]


@pytest.mark.parametrize(
    ("partitions", "failed", "killed", "retries"),
    [
        ({"totalPartitions": 2, "partitionSize": 2}, "w-3", ["w-2", "w-3"], 1),
        ({"totalPartitions": 2, "partitionSize": 2}, "w-0", ["w-0", "w-1"], 1),
        ({"totalPartitions": 4, "partitionSize": 1}, "w-2", ["w-2"], 1),
        (None, "w-3", [], 0),  # no partitions: Volcano restarts nothing and counts nothing
    ],
)
def test_restart_partition_deletes_the_pods_of_the_failed_pods_partition(
    partitions: dict[str, int] | None, failed: str, killed: list[str], retries: int
) -> None:
    builder = make_job("a").task("w", 4).policy("PodFailed", "RestartPartition")
    if partitions is not None:
        builder.set("spec.tasks[0].partitionPolicy", partitions)
    job = builder.status(phase="Running").model()
    phases = {f"w-{i}": R for i in range(4)} | {failed: F}
    result = step(job, pods(job, phases))
    assert result.decision.action is Action.RESTART_PARTITION
    assert (deleted(result), result.status.retry_count) == (killed, retries)
    assert result.phase == "Running"


@pytest.mark.parametrize(
    ("exit_code", "action"),
    [(3, Action.RESTART_JOB), (1, Action.SYNC_JOB)],
    ids=["the exit code a policy names", "another exit code: default sync"],
)
def test_pod_failed_with_an_exit_code_policy(exit_code: int, action: Action) -> None:
    job = tf().policy(action="RestartJob", exit_code=3).status(phase="Running").model()
    failed = make_job_pod(job, "worker", 0).phase("Failed", exit_code=exit_code)
    assert step(job, pods(job, {"ps-0": R, "worker-1": R}, failed)).decision.action is action


@pytest.mark.parametrize(
    ("failing", "action"),
    [("worker-0", Action.RESTART_TASK), ("ps-0", Action.RESTART_JOB)],
    ids=["the task's policy wins for its pods", "the job's policy for other tasks"],
)
def test_task_policies_take_precedence_over_job_policies(failing: str, action: Action) -> None:
    job = tf().policy("PodFailed", "RestartJob").policy("PodFailed", "RestartTask", task="worker")
    model = job.status(phase="Running").model()
    found = pods(model, {"ps-0": R, "worker-0": R, "worker-1": R, failing: F})
    assert step(model, found).decision.action is action


@pytest.mark.parametrize(
    ("replicas", "killed", "made"),
    [(1, ["worker-1", "worker-2"], []), (5, [], ["worker-3", "worker-4"])],
    ids=["scale down deletes indexes >= replicas", "scale up creates the new indexes"],
)
def test_scaling(replicas: int, killed: list[str], made: list[str]) -> None:
    job = make_job("tf").task("ps", 1).task("worker", replicas).status(phase="Running").model()
    result = step(job, pods(job, {"ps-0": R, "worker-0": R, "worker-1": R, "worker-2": S}))
    assert (deleted(result), created(result)) == (killed, made)


@pytest.mark.parametrize(
    ("iteration", "a_min", "found", "made"),
    [
        ("all", None, {"a-0": R, "a-1": R, "b-0": P}, []),
        ("all", None, {"a-0": R, "a-1": S, "b-0": S}, ["c-0"]),
        ("any", None, {"a-0": R, "a-1": R, "b-0": P}, ["c-0"]),
        ("any", None, {}, ["a-0", "a-1", "b-0"]),
        ("all", 1, {"a-0": R, "a-1": P, "b-0": R}, ["c-0"]),
        ("all", None, {"a-0": R, "a-1": P, "b-0": R}, []),
    ],
    ids=[
        "all: a dependency not running yet",
        "all: every dependency runs or ran",
        "any: one dependency runs",
        "nothing runs yet: only the dependencies are made",
        "a dependency's minAvailable running is enough",
        "minAvailable unset: every replica of the dependency must run",
    ],
)
def test_depends_on(
    iteration: str, a_min: int | None, found: dict[str, str], made: list[str]
) -> None:
    builder = make_job("j").task("a", 2, min_available=a_min).task("b", 1).min_available(4)
    job = builder.task("c", 1, depends_on=["a", "b"], iteration=iteration).status(phase="Pending")
    assert created(step(job.model(), pods(job.model(), found))) == made


@pytest.mark.parametrize(
    ("phase", "ttl", "after", "requeue", "delete"),
    [
        ("Completed", 60, 10, 50.0, False),
        ("Failed", 60, 60, None, True),
        ("Terminated", 60, 61, None, True),
        ("Completed", None, 3600, None, False),
    ],
    ids=["before the ttl: requeue then", "at the ttl: delete", "after the ttl: delete", "no ttl"],
)
def test_ttl_after_finished(
    phase: str, ttl: int | None, after: float, requeue: float | None, delete: bool
) -> None:
    builder = tf().status(state={"phase": phase, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    result = step((builder.ttl(ttl) if ttl is not None else builder).model(), {}, at=after)
    assert (result.requeue_after, result.delete_job) == (requeue, delete)


@pytest.mark.parametrize(
    ("ttl", "after", "requeue", "delete"),
    [(5, 10, None, True), (3600, 70, 3530.0, False), (None, 70, None, False)],
    ids=["shortened: deleted at once", "lengthened: later", "removed: kept"],
)
def test_a_ttl_changed_once_the_job_finished_counts_from_when_it_finished(
    ttl: int | None, after: float, requeue: float | None, delete: bool
) -> None:
    """Finished with ttl 60; each pass reads the TTL afresh (the webhook keeps it fixed, as
    Volcano's does; a job changed without it is still handled)."""
    finished = {"phase": "Completed", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    builder = tf().status(state=finished)
    result = step((builder.ttl(ttl) if ttl is not None else builder).model(), {}, at=after)
    assert (result.requeue_after, result.delete_job) == (requeue, delete)


def test_a_job_finishing_with_ttl_zero_is_deleted_at_once() -> None:
    job = tf().ttl(0).status(phase="Running").model()
    result = step(job, tf_pods(job, S, S, S))
    assert (result.phase, result.delete_job) == ("Completed", True)


def test_a_job_being_deleted_plans_nothing() -> None:
    job = tf().policy("PodFailed", "RestartJob").status(phase="Running").model()
    gone = job.metadata.model_copy(update={"deletion_timestamp": "2026-01-01T00:00:00Z"})
    job = job.model_copy(update={"metadata": gone})
    result = step(job, tf_pods(job, F))
    assert (result.phase, result.create, result.delete, result.delete_job) == (R, [], [], False)


def test_old_version_pods_of_a_running_job_are_deleted_and_not_yet_replaced() -> None:
    job = tf().status(phase="Running", version=2).model()
    result = step(job, tf_pods(job, R, R, more=[pod(job, "worker-1").version(1)]))
    assert (deleted(result), result.create, result.phase) == (["worker-1"], [], "Running")


@pytest.mark.parametrize(
    ("event", "timeout", "after", "action", "recheck"),
    [
        ("PodPending", "5m", 100, Action.SYNC_JOB, 200.0),
        ("PodPending", "5m", 300, Action.RESTART_POD, None),
        ("PodPending", None, 3600, Action.SYNC_JOB, None),
        ("*", None, 3600, Action.SYNC_JOB, None),
    ],
    ids=[
        "before the timeout: look again when it ends",
        "at the timeout: the action",
        "PodPending without a timeout: never",
        "* never means pending a while",
    ],
)
def test_pod_pending_timeout(
    event: str, timeout: str | None, after: float, action: Action, recheck: float | None
) -> None:
    job = make_job("a").task("w", 2).min_available(2).policy(event, "RestartPod", timeout=timeout)
    model = job.status(phase="Pending").model()
    result = step(model, pods(model, {"w-0": P, "w-1": R}), at=after)
    assert (result.decision.action, result.requeue_after) == (action, recheck)
    assert deleted(result) == (["w-0"] if action is Action.RESTART_POD else [])


def test_status_counts_pods_per_phase_and_task() -> None:
    job = make_job("j").task("ps", 1).task("worker", 4).min_available(5).status(phase="Running")
    model = job.model()
    found = pods(
        model,
        {"ps-0": R, "worker-0": P, "worker-1": S, "worker-2": F},
        pod(model, "worker-3").terminating(),
    )
    status = count(model, found.values())
    counted = (status.pending, status.running, status.succeeded, status.failed, status.terminating)
    assert (counted, status.min_available) == ((1, 1, 1, 1, 1), 5)
    assert {task: state.phase for task, state in status.task_status_count.items()} == {
        "ps": {R: 1},
        "worker": {F: 1, P: 1, S: 1},
    }
    assert step(model, found).status.task_status_count == status.task_status_count


def test_conditions_are_capped_keeping_the_newest() -> None:
    old = [
        {"status": "Pending", "lastTransitionTime": f"2025-01-01T00:00:{i:02d}Z"}
        for i in range(MAX_CONDITIONS)
    ]
    job = tf().status(phase="Pending", conditions=old).model()
    conditions = step(job, tf_pods(job, R, R, R)).status.conditions
    assert (len(conditions), conditions[-1].status) == (MAX_CONDITIONS, "Running")
    assert conditions[0].last_transition_time == "2025-01-01T00:00:01Z"


def test_a_finished_job_without_a_transition_time_gets_one_so_its_ttl_can_run() -> None:
    model = tf().ttl(60).status(phase="Completed").model()
    result = step(model, {})
    assert result.status.state.last_transition_time == "2026-01-01T00:00:00Z"
    assert (result.delete_job, result.requeue_after) == (False, 60)


def refusals(status: JobStatus, *times: float, message: str = "pod invalid", invalid: bool = True):  # type: ignore[no-untyped-def]
    """`status` after pods refused at each of `times` (seconds after NOW)."""
    for at in times:
        status = refused(status, message, NOW + at, invalid=invalid)
    return status


@pytest.mark.parametrize(
    ("invalid", "times", "phase"),
    [
        (True, (0, 0.25, 0.75, 1.75, 3.75, 7.75), "Pending"),
        (True, (0, 0.25, 0.75, 1.75, 3.75, 7.75, 15.75), "Failed"),
        (False, (0, 1, 3, 7, 15, 31, 63, 123, 183, 243), "Pending"),
        (False, (0, 1, 3, 7, 15, 31, 63, 123, 183, 243, 303), "Failed"),
    ],
    ids=[
        "an invalid template: Pending while tried a few seconds",
        "an invalid template: Failed after REFUSED_INVALID_FOR",
        "refused otherwise (quota, policy): Pending while it may clear up",
        "refused otherwise: Failed after REFUSED_FOR",
    ],
)
def test_pods_refused_fail_the_job_after_a_bounded_time(
    invalid: bool, times: tuple[float, ...], phase: str
) -> None:
    job = tf().status(phase="Pending").model()
    status = refusals(job.status, *times, invalid=invalid)
    assert (status.state.phase, status.state.reason) == (phase, POD_CREATE_FAILED)
    assert status.state.message.startswith("pod invalid")
    if phase == "Failed":
        assert status.state.message.endswith(f"no pod could be created for {times[-1]:.0f}s")
        assert plan(job.model_copy(update={"status": status}), {}, [], NOW + times[-1]).create == []
    else:  # the same refusal again is said once: nothing to write, no condition added
        assert [c.reason for c in status.conditions] == [POD_CREATE_FAILED]
        assert refused(status, "pod invalid", NOW + times[-1], invalid=invalid) == status


def test_pods_created_end_a_run_of_refusals() -> None:
    """Refused, then created (the quota freed), then refused again later: the time counts from
    the second refusal, not the first."""
    first = refusals(tf().status(phase="Pending").model().status, 0, 200, invalid=False)
    assert refused_since(first) == NOW
    cleared = pods_created(first, NOW + 250)
    assert (cleared.state.reason, cleared.conditions[-1].reason, refused_since(cleared)) == (
        "",
        PODS_CREATED,
        None,
    )
    again = refusals(cleared, 290, 400, message="quota", invalid=False)
    assert (again.state.phase, refused_since(again)) == ("Pending", NOW + 290)
    assert refusals(again, 600, message="quota", invalid=False).state.phase == "Failed"


def test_another_refusal_message_is_said_but_keeps_the_first_time() -> None:
    status = refusals(tf().status(phase="Pending").model().status, 0, 4, message="one")
    status = refusals(status, 8, message="one (and 1 more)")
    # one condition for the run, saying the latest refusal, dated when the run began
    assert [(c.message, c.last_transition_time) for c in status.conditions] == [
        ("one (and 1 more)", "2026-01-01T00:00:00Z")
    ]
    assert (status.state.message, refused_since(status)) == ("one (and 1 more)", NOW)
    assert refusals(status, 10, message="one (and 1 more)").state.phase == "Failed"


def test_refusals_whose_messages_keep_changing_still_fail_the_job() -> None:
    """Twenty different messages (more than the conditions kept) do not postpone the end."""
    status = tf().status(phase="Pending").model().status
    for second in range(20):
        status = refusals(status, second * 16, message=f"quota {second}", invalid=False)
    assert refused_since(status) == NOW
    assert refusals(status, 300, message="quota 21", invalid=False).state.phase == "Failed"
