"""The job's phase machine: from the job and its pods to a plan (pods to create and delete, the
status to write, whether the job's time is up). Pure: no I/O, `now` is given.

Policies (`policies.decide`) are consulted only in Pending and Running; every other phase runs its
own step, as Volcano's do:
- RestartJob: every pod is deleted, `version` and `retryCount` go up, Restarting; once no pod of an
  older version is left, Pending again (and the pods are made anew at the new version), unless
  `retryCount` reached `maxRetry`: then Failed.
- RestartTask / RestartPod / RestartPartition: the task's pods / the pod / the pods of the pod's
  partition (`partitionPolicy`; nothing for a task without one, as in Volcano) are deleted and made
  again at the same version; each counts as a retry against `maxRetry` as well (a pod failing for
  ever fails the job instead of looping).
- AbortJob, TerminateJob, CompleteJob: pods that have not finished are deleted (finished ones are
  kept for their logs), Aborting / Terminating / Completing until none is left, then Aborted /
  Terminated / Completed.
- Sync (no policy matched): pods missing from the spec are made (a task whose `dependsOn` tasks are
  not ready yet waits), pods beyond `replicas` or of removed tasks are deleted (scaling down);
  Pending becomes Running once `minAvailable` pods run or ran; Running becomes Completed when
  `minSuccess` pods succeeded, or when every pod finished and enough succeeded (else Failed).
- Finished jobs (Completed, Failed, Terminated) keep no running pods, and are deleted
  `ttlSecondsAfterFinished` after they finished.
- Pods the API server refuses to create (`refused`): a `PodCreateFailed` condition and the state's
  reason and message say why while the controller tries again with backoff; once they have been
  refused for `REFUSED_INVALID_FOR` seconds (every refusal says the pod is invalid: the template
  cannot change once the job exists, so it never will be valid) or `REFUSED_FOR` seconds (a
  refusal that may clear up: quota, a missing ServiceAccount or PriorityClass, a policy), the job
  is Failed with reason `PodCreateFailed` and the server's words, so `kubectl get vcjob` shows
  Failed rather than Pending for ever. Volcano keeps such a job Pending while it retries, then,
  after 15 retries (about three minutes), terminates it (Terminated); Lahar says Failed, with the
  reason, as the job's own spec is at fault, and fails an invalid template within seconds.
- A Command (`vcctl job suspend|resume`) asks for one action: taken before any policy while the
  job is Pending or Running, and AbortJob / TerminateJob / CompleteJob while it is Restarting too
  (a suspend sent right after a resume is not lost); ResumeJob restarts an Aborted job at a new
  version. Neither suspending nor resuming is a retry: `retryCount` counts the restarts the
  policies asked for only, so a job suspended and resumed any number of times never reaches
  `maxRetry` that way (Volcano counts each resume as a retry and fails the job after `maxRetry`
  resumes; a suspend is the user's, not a failure).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from extender.api.batch import (
    FINISHED,
    Action,
    Job,
    JobCondition,
    JobPod,
    JobState,
    JobStatus,
    Phase,
    TaskSpec,
    TaskState,
)
from extender.api.times import parse_time, rfc3339
from extender.controller.policies import Decision, Seen, decide, observe

MAX_CONDITIONS = 16
POD_CREATE_FAILED = "PodCreateFailed"
PODS_CREATED = "PodsCreated"
REFUSED_INVALID_FOR = 10.0  # seconds a template the server finds invalid is tried before Failed
REFUSED_FOR = 300.0  # seconds pods refused otherwise (quota, policy) are tried before Failed
KILLS = {
    Action.ABORT_JOB: Phase.ABORTING,
    Action.TERMINATE_JOB: Phase.TERMINATING,
    Action.COMPLETE_JOB: Phase.COMPLETING,
}
ENDS = {
    Phase.ABORTING: Phase.ABORTED,
    Phase.TERMINATING: Phase.TERMINATED,
    Phase.COMPLETING: Phase.COMPLETED,
}
FINISHED_PODS = ("Succeeded", "Failed")
GOING = (Phase.PENDING, Phase.RUNNING)  # the phases the policies are consulted in


def problem(
    status: JobStatus, reason: str, message: str, now: float, *, phase: Phase | None = None
) -> JobStatus:
    """`status` with a problem the controller hit (a refused pod, an invalid job) in the state's
    reason and message and in a condition; with `phase`, the job enters that phase too."""
    stamp = rfc3339(now)
    changes: dict[str, str] = {"reason": reason, "message": message}
    if phase is not None:
        changes |= {"phase": phase, "last_transition_time": stamp}
    state = status.state.model_copy(update=changes)
    condition = JobCondition(
        status=state.phase, last_transition_time=stamp, reason=reason, message=message[:1024]
    )
    conditions = [*status.conditions, condition][-MAX_CONDITIONS:]
    return status.model_copy(update={"state": state, "conditions": conditions})


def refused_since(status: JobStatus) -> float | None:
    """When the job's pods began to be refused, if they still are: the first of the trailing
    `PodCreateFailed` conditions (a phase entered or pods created since end such a run)."""
    if status.state.reason != POD_CREATE_FAILED:
        return None
    since: str | None = None
    for condition in reversed(status.conditions):
        if condition.reason != POD_CREATE_FAILED:
            break
        since = condition.last_transition_time
    return parse_time(since)


def refused(status: JobStatus, message: str, now: float, *, invalid: bool) -> JobStatus:
    """`status` with the job's pods refused for `message` (`invalid`: every refusal said the pod
    is invalid): a `PodCreateFailed` condition (`status` itself when it says so already), or the
    job Failed once its pods have been refused long enough."""
    since = refused_since(status)
    limit = REFUSED_INVALID_FOR if invalid else REFUSED_FOR
    if since is not None and now - since >= limit:
        told = f"{message}; no pod could be created for {now - since:.0f}s"
        return problem(status, POD_CREATE_FAILED, told, now, phase=Phase.FAILED)
    if since is None:
        return problem(status, POD_CREATE_FAILED, message, now)
    if status.state.message == message:
        return status
    # Another refusal in the same run: the run's condition says it, keeping when the run began
    # (a condition per message would push that time out of the bounded list).
    last = status.conditions[-1].model_copy(update={"message": message[:1024]})
    state = status.state.model_copy(update={"message": message})
    return status.model_copy(update={"state": state, "conditions": [*status.conditions[:-1], last]})


def pods_created(status: JobStatus, now: float) -> JobStatus:
    """`status` once the pods refused before were created: the problem cleared, and a condition
    saying so (which ends the run of `PodCreateFailed` ones)."""
    state = status.state.model_copy(update={"reason": "", "message": ""})
    condition = JobCondition(
        status=state.phase, last_transition_time=rfc3339(now), reason=PODS_CREATED
    )
    conditions = [*status.conditions, condition][-MAX_CONDITIONS:]
    return status.model_copy(update={"state": state, "conditions": conditions})


@dataclass
class Plan:
    status: JobStatus
    decision: Decision = field(default_factory=lambda: Decision(Action.SYNC_JOB))
    create: list[tuple[TaskSpec, int]] = field(default_factory=list)
    delete: list[JobPod] = field(default_factory=list)
    delete_job: bool = False
    requeue_after: float | None = None

    @property
    def phase(self) -> str:
        return self.status.state.phase


def count(job: Job, pods: Iterable[JobPod]) -> JobStatus:
    """The job's status with its pod counts taken from `pods` (terminating pods apart)."""
    phases: Counter[str] = Counter()
    tasks: dict[str, Counter[str]] = {}
    terminating = 0
    for pod in pods:
        if pod.terminating:
            terminating += 1
            continue
        phases[pod.phase] += 1
        tasks.setdefault(pod.task, Counter())[pod.phase] += 1
    return job.status.model_copy(
        update={
            "min_available": job.spec.min_available,
            "pending": phases["Pending"],
            "running": phases["Running"],
            "succeeded": phases["Succeeded"],
            "failed": phases["Failed"],
            "unknown": phases["Unknown"],
            "terminating": terminating,
            "task_status_count": {
                task: TaskState(phase=dict(sorted(counts.items())))
                for task, counts in sorted(tasks.items())
            },
        }
    )


class _Step:
    """One reconcile's working copy of the job's status and the pod changes it decided."""

    def __init__(self, job: Job, pods: Mapping[str, JobPod], now: float) -> None:
        self.job, self.pods, self.now = job, pods, now
        self.status = count(job, pods.values())
        self.delete: dict[str, JobPod] = {}
        self.create: list[tuple[TaskSpec, int]] = []

    @property
    def phase(self) -> Phase:
        return Phase(self.status.state.phase or Phase.PENDING)

    def enter(self, phase: Phase, reason: str = "", message: str = "") -> None:
        if self.status.state.phase == phase and self.status.state.reason == reason:
            return
        stamp = rfc3339(self.now)
        conditions = [
            *self.status.conditions,
            JobCondition(status=phase, last_transition_time=stamp),
        ]
        self.status = self.status.model_copy(
            update={
                "state": JobState(
                    phase=phase, reason=reason, message=message, last_transition_time=stamp
                ),
                "conditions": conditions[-MAX_CONDITIONS:],
            }
        )

    def update(self, **values: int) -> None:
        self.status = self.status.model_copy(update=values)

    def kill(self, *, keep_finished: bool, pods: Iterable[JobPod] | None = None) -> None:
        for pod in self.pods.values() if pods is None else pods:
            if pod.terminating or (keep_finished and pod.phase in FINISHED_PODS):
                continue
            self.delete[pod.name] = pod

    def alive(self) -> int:
        """Pods still running or going away (finished pods are not)."""
        return sum(1 for p in self.pods.values() if p.terminating or p.phase not in FINISHED_PODS)

    def retry(self, reason: str, message: str) -> bool:
        """Count one retry; False (and the job Failed) when `maxRetry` is reached."""
        retries = self.status.retry_count + 1
        self.update(retry_count=retries)
        if retries >= self.job.spec.max_retry:
            self.kill(keep_finished=True)
            self.enter(Phase.FAILED, "MaxRetryExceeded", f"{message}; retried {retries} times")
            return False
        return True


def plan(
    job: Job,
    pods: Mapping[str, JobPod],
    evicted: Iterable[JobPod],
    now: float,
    command: Action | None = None,
) -> Plan:
    """What to do next for `job`, whose pods (every version) are `pods`, at time `now`; with a
    `command` (a Command object's action) that action instead of the policies' while the job is
    Pending or Running (a kill while Restarting too), and ResumeJob for an Aborting or Aborted
    job; ignored otherwise."""
    step = _Step(job, pods, now)
    if job.metadata.deletion_timestamp is not None:
        return Plan(step.status)  # garbage collection removes its pods
    if not job.status.state.phase:
        step.enter(Phase.PENDING, "Created", "the job was accepted")
    decision = Decision(Action.SYNC_JOB)
    requeue: float | None = None
    phase = step.phase
    takes = (Phase.PENDING, Phase.RUNNING, Phase.RESTARTING) if command in KILLS else GOING
    if command is not None and phase in takes:
        decision = Decision(command, commanded=True)
        _act(step, decision)
    elif command is Action.RESUME_JOB and phase in (Phase.ABORTING, Phase.ABORTED):
        decision = Decision(command, commanded=True)
        _resume(step)
    elif phase in GOING:
        seen: Seen = observe(job, pods, evicted, now)
        requeue = seen.recheck_after
        decision = decide(job, seen)
        _act(step, decision)
    elif phase is Phase.RESTARTING:
        _restarting(step)
    elif phase in ENDS:
        step.kill(keep_finished=True)
        if step.alive() == 0:
            step.enter(ENDS[phase], step.status.state.reason, step.status.state.message)
    else:  # Aborted and the finished phases keep nothing running
        step.kill(keep_finished=True)
    if step.phase in FINISHED:
        return _finished(step, decision)
    return Plan(step.status, decision, step.create, list(step.delete.values()), False, requeue)


def _act(step: _Step, decision: Decision) -> None:
    job, action, trigger = step.job, decision.action, decision.trigger
    why = trigger.describe() if trigger is not None else ""
    if action is Action.RESTART_JOB:
        if step.retry("RestartJob", why):
            step.kill(keep_finished=False)
            step.update(version=job.status.version + 1)
            step.enter(Phase.RESTARTING, "RestartJob", why)
    elif action in KILLS:
        step.kill(keep_finished=True)
        step.enter(KILLS[action], action.value, why)
    elif action is Action.RESTART_TASK and trigger is not None:
        if step.retry("RestartTask", why):
            step.kill(
                keep_finished=False,
                pods=[p for p in step.pods.values() if p.task == trigger.task],
            )
    elif action is Action.RESTART_POD and trigger is not None and trigger.pod is not None:
        if step.retry("RestartPod", why):
            pod = step.pods.get(trigger.pod.name)
            if pod is not None and pod.metadata.uid == trigger.pod.metadata.uid:
                step.kill(keep_finished=False, pods=[pod])
    elif action is Action.RESTART_PARTITION and trigger is not None and trigger.pod is not None:
        partition = _partition(step, trigger.task, trigger.pod.index)
        if partition and step.retry("RestartPartition", why):
            step.kill(keep_finished=False, pods=partition)
    else:  # SyncJob, ResumeJob (nothing to resume while pending or running)
        _sync(step)


def _partition(step: _Step, task_name: str, index: int) -> list[JobPod]:
    """The pods of the partition of `task_name`'s pod `index`; none when the task has no
    partition policy (Volcano then restarts nothing, and counts no retry)."""
    task = step.job.task(task_name)
    if task is None or (partition := task.partition_of(index)) is None:
        return []
    return [
        p
        for p in step.pods.values()
        if p.task == task_name and task.partition_of(p.index) == partition
    ]


def _resume(step: _Step) -> None:
    """An aborted job starts over at a new version (its pods are made anew); not a retry."""
    step.kill(keep_finished=False)
    step.update(version=step.job.status.version + 1)
    step.enter(Phase.RESTARTING, "ResumeJob", "resumed by a Command")


def _restarting(step: _Step) -> None:
    version = step.job.status.version
    step.kill(keep_finished=False, pods=[p for p in step.pods.values() if p.version < version])
    if step.status.retry_count >= step.job.spec.max_retry:
        step.enter(Phase.FAILED, "MaxRetryExceeded", f"retried {step.status.retry_count} times")
    elif not any(p.version < version for p in step.pods.values()):
        step.enter(Phase.PENDING, "Restarted", f"restarted at version {version}")


def _ready(step: _Step, task: TaskSpec) -> bool:
    """The tasks `task` depends on run (enough of their pods run or succeeded)."""
    depends = task.depends_on
    if depends is None or not depends.name:
        return True
    version = step.job.status.version

    def task_ready(name: str) -> bool:
        other = step.job.task(name)
        if other is None:
            return False
        up = sum(
            1
            for p in step.pods.values()
            if p.task == name and p.version == version and p.phase in ("Running", "Succeeded")
        )
        return up >= max(other.min_members, 1 if other.replicas else 0)

    ready = [task_ready(name) for name in depends.name]
    return any(ready) if depends.iteration == "any" else all(ready)


def _sync(step: _Step) -> None:
    job, version = step.job, step.job.status.version
    wanted: set[str] = set()
    for task in job.spec.tasks:
        ready = _ready(step, task)
        for index in range(task.replicas):
            name = f"{job.metadata.name}-{task.name}-{index}"
            wanted.add(name)
            pod = step.pods.get(name)
            if pod is None:
                if ready:
                    step.create.append((task, index))
            elif pod.version != version:
                step.kill(keep_finished=False, pods=[pod])
    step.kill(keep_finished=False, pods=[p for n, p in step.pods.items() if n not in wanted])
    current = [p for p in step.pods.values() if p.version == version and p.name in wanted]
    live = [p for p in current if not p.terminating]
    phases = Counter(p.phase for p in live)
    started = phases["Running"] + phases["Succeeded"] + phases["Failed"]
    if step.phase is Phase.PENDING and started >= job.spec.min_available and live:
        step.enter(Phase.RUNNING, "MinAvailableReached", f"{started} pods started")
    if step.phase is Phase.RUNNING:
        _maybe_done(step, live)


def _maybe_done(step: _Step, live: list[JobPod]) -> None:
    job = step.job
    replicas = job.spec.replicas
    if replicas == 0:
        return  # scaled down to nothing: the phase stays
    succeeded = sum(1 for p in live if p.phase == "Succeeded")
    failed = sum(1 for p in live if p.phase == "Failed")
    min_success = job.spec.min_success
    if min_success is not None and succeeded >= min_success:
        step.kill(keep_finished=True)
        step.enter(Phase.COMPLETED, "MinSuccessReached", f"{succeeded} pods succeeded")
        return
    if succeeded + failed < replicas:
        return
    short = [
        t.name
        for t in job.spec.tasks
        if t.min_available is not None
        and sum(1 for p in live if p.task == t.name and p.phase == "Succeeded") < t.min_available
    ]
    total_min = sum(t.min_members for t in job.spec.tasks)
    if short and job.spec.min_available >= total_min:
        step.enter(Phase.FAILED, "TaskFailed", f"too few pods of task {short[0]} succeeded")
    elif min_success is not None and succeeded < min_success:
        step.enter(Phase.FAILED, "MinSuccessNotReached", f"{succeeded}/{min_success} succeeded")
    elif succeeded >= job.spec.min_available:
        step.enter(Phase.COMPLETED, "Completed", f"{succeeded}/{replicas} pods succeeded")
    else:
        step.enter(Phase.FAILED, "Failed", f"{succeeded}/{replicas} pods succeeded")


def _finished(step: _Step, decision: Decision) -> Plan:
    step.kill(keep_finished=True)
    ttl = step.job.spec.ttl_seconds_after_finished
    delete_job, requeue = False, None
    if step.status.state.last_transition_time is None:  # finished by a writer that kept no time
        stamped = step.status.state.model_copy(update={"last_transition_time": rfc3339(step.now)})
        step.status = step.status.model_copy(update={"state": stamped})
    if ttl is not None:
        since = parse_time(step.status.state.last_transition_time) or step.now
        left = since + ttl - step.now
        delete_job, requeue = left <= 0, (left if left > 0 else None)
    return Plan(step.status, decision, [], list(step.delete.values()), delete_job, requeue)
