"""Lifecycle policies: which events the job's pods show, and which action a policy asks for.

Pure: the events are read from the pods of the job's current version (level-based, so a restarted
controller sees the same events again) plus the evictions the store remembered. In order:
PodEvicted, PodFailed (with the exit code), Unknown, PodPending past a policy's timeout,
TaskCompleted (every replica of a task succeeded), TaskFailed (the kubelet restarted the
containers of a task's running and pending pods more than the task's `maxRetry` times, 3 when
unset, never with -1: Volcano's rule). `resolve` follows Volcano's order: the task's policies
(by event or `*`, then by exit code), then the job's; no match is the default, SyncJob.

The same concept at a lower layer: `admission.policies`, which checks a Job's policies as this
module reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from extender.api.batch import Action, Event, Job, JobPod, LifecyclePolicy, TaskSpec
from extender.api.duration import parse_duration
from extender.api.log_fields import about_job
from extender.api.times import parse_time

log = logging.getLogger(__name__)
DEFAULT_TASK_RETRIES = 3  # a task's maxRetry when unset (0)


@dataclass(frozen=True)
class Trigger:
    """An event seen on the job, and what it concerns."""

    event: Event
    task: str
    pod: JobPod | None = None
    exit_code: int | None = None

    def describe(self) -> str:
        what = f"pod {self.pod.name}" if self.pod is not None else f"task {self.task}"
        code = f" (exit code {self.exit_code})" if self.exit_code is not None else ""
        return f"{self.event.value} on {what}{code}"


@dataclass(frozen=True)
class Decision:
    action: Action
    trigger: Trigger | None = None
    commanded: bool = False  # a Command's action, taken before any policy


def _matches(policy: LifecyclePolicy, event: Event) -> bool:
    events = policy.all_events
    if event is Event.POD_PENDING:  # needs its own timeout: `*` never means "pending a while"
        return Event.POD_PENDING.value in events and policy.timeout is not None
    return event.value in events or Event.ANY.value in events


def resolve(job: Job, trigger: Trigger) -> Action | None:
    """The action the job's policies ask for on `trigger`, or None (the default sync)."""
    task = job.task(trigger.task)
    for policies in (task.policies if task else [], job.spec.policies):
        by_event = [p for p in policies if p.exit_code is None and _matches(p, trigger.event)]
        by_code = [
            p for p in policies if p.exit_code is not None and p.exit_code == trigger.exit_code
        ]
        for policy in [*by_event, *by_code]:
            if (action := _action(policy)) is not None:  # an unknown action is skipped
                return action
    return None


def _action(policy: LifecyclePolicy) -> Action | None:
    try:
        return Action(policy.action)
    except ValueError:
        log.warning("ignoring a lifecycle policy with unknown action %r", policy.action)
        return None


def pending_timeout(job: Job, task: TaskSpec) -> float | None:
    """The shortest PodPending timeout that applies to the task's pods, in seconds."""
    timeouts: list[float] = []
    for policy in [*task.policies, *job.spec.policies]:
        if _matches(policy, Event.POD_PENDING) and policy.timeout is not None:
            try:
                timeouts.append(parse_duration(policy.timeout))
            except ValueError:
                log.warning(
                    "job %s: PodPending timeout %r is not a duration",
                    job.key,
                    policy.timeout,
                    extra=about_job(job.key),
                )
    return min(timeouts) if timeouts else None


def made_for(job: Job, pod: JobPod) -> bool:
    """The pod was made for this very job, not for an earlier job of the same name whose pods
    garbage collection is still removing (their controlling owner is that job's uid)."""
    owner = pod.metadata.controlled_by("Job")
    return owner is None or owner.uid == job.metadata.uid


@dataclass(frozen=True)
class Seen:
    triggers: list[Trigger]
    recheck_after: float | None  # a pending pod's timeout still running: look again then


def observe(job: Job, pods: Mapping[str, JobPod], evicted: Iterable[JobPod], now: float) -> Seen:
    """The events the job's current-version pods show, in the order policies are consulted. An
    eviction of a pod made for an earlier namesake (deleted with it) is none of this job's."""
    version = job.status.version
    current = [p for p in pods.values() if p.version == version and made_for(job, p)]
    live = [p for p in current if not p.terminating]
    triggers = [
        Trigger(Event.POD_EVICTED, p.task, p)
        for p in evicted
        if p.version == version and made_for(job, p)
    ]
    for pod in live:
        if pod.phase == "Failed":
            triggers.append(Trigger(Event.POD_FAILED, pod.task, pod, pod.exit_code))
    triggers += [Trigger(Event.UNKNOWN, p.task, p) for p in live if p.phase == "Unknown"]
    recheck: float | None = None
    for task in job.spec.tasks:
        timeout = pending_timeout(job, task)
        if timeout is None:
            continue
        for pod in live:
            if pod.task != task.name or pod.phase != "Pending":
                continue
            born = parse_time(pod.metadata.creation_timestamp)
            if born is None:
                continue
            left = born + timeout - now
            if left <= 0:
                triggers.append(Trigger(Event.POD_PENDING, task.name, pod))
            else:
                recheck = left if recheck is None else min(recheck, left)
    for task in job.spec.tasks:
        mine = [p for p in live if p.task == task.name and 0 <= p.index < task.replicas]
        succeeded = sum(1 for p in mine if p.phase == "Succeeded")
        restarts = sum(p.restarts for p in mine if p.phase in ("Pending", "Running"))
        limit = task.max_retry or DEFAULT_TASK_RETRIES
        if task.replicas > 0 and succeeded == task.replicas:
            triggers.append(Trigger(Event.TASK_COMPLETED, task.name))
        elif limit >= 0 and restarts > limit:
            triggers.append(Trigger(Event.TASK_FAILED, task.name))
    return Seen(triggers, recheck)


def decide(job: Job, seen: Seen) -> Decision:
    """The first trigger a policy answers decides; none answered is the default sync."""
    for trigger in seen.triggers:
        action = resolve(job, trigger)
        if action is not None:
            return Decision(action, trigger)
    return Decision(Action.SYNC_JOB)
