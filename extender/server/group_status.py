"""A PodGroup's status, derived from its gang and the gang rules; the events its changes make.

`group_status` is a pure function of what the cache shows (the gang's members and their phases),
whether the gang is admitted and why it waits, and the status written before (to keep
`lastTransitionTime` of conditions that did not change). Phases, Volcano's five:

- Pending: not admitted; nothing of it bound.
- Inqueue: admitted (capacity reserved), or some members placed but fewer than `minMember`, or
  shown to the scheduler so that an autoscaler sees its pods (`shown`: its queue's scale-up mode
  is `unschedulable`; still Unschedulable). As in Volcano, a Job's pods are created once its
  PodGroup is Inqueue.
- Running: at least `minMember` members bound or succeeded (and each task's `minTaskMember`).
- Completed: every member finished (a Job completed by its policy deletes the members still
  running, e.g. parameter servers once the workers succeeded). Volcano has no Failed phase: a
  gang that finished with fewer than `minMember` succeeded and some failed is Completed without
  the Scheduled condition, with a Warning event `Failed` (and `status.failed`).

Conditions: `Unschedulable` (True with the rejection's reason and message while the gang waits;
False once it is admitted or stands; kept as it was while there is no verdict, e.g. just after a
restart) and `Scheduled` (True once the gang stands). Conditions of other types, which other
controllers write, are kept as they are. A finished gang whose pods were deleted keeps its status
(Failed too, as Lahar wrote it before it followed Volcano's phases). An Unschedulable event is
recorded when the reason changes, not when only the figures in the message move. `events` compares
two statuses and says which Kubernetes Events the change deserves, so a status written once gives
one event, however many members moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.api.scheduling import PodGroupCondition, PodGroupStatus
from extender.framework.engine import Cause, GangView, Rejection

UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"

# Volcano's condition reasons, where a cause has one.
_REASONS = {
    Cause.NOT_ENOUGH_RESOURCES: "NotEnoughResources",
    Cause.MIN_RESOURCES: "NotEnoughResources",
    Cause.NOT_ENOUGH_PODS: "NotEnoughTasks",
    Cause.NOT_ENOUGH_PODS_OF_TASK: "NotEnoughPodsOfTask",
    Cause.QUEUED: "NotEnoughResources",
}


@dataclass(frozen=True)
class PodGroupEvent:
    type: str  # Normal | Warning
    reason: str
    message: str


def group_status(
    gang: GangView,
    *,
    admitted: bool,
    rejection: Rejection | None,
    previous: PodGroupStatus,
    now: str,
    shown: bool = False,
) -> PodGroupStatus:
    """The status the gang's PodGroup should show; `now` stamps conditions that change."""
    members = gang.placed or gang.pending or gang.succeeded or gang.failed
    if not members and previous.phase in ("Completed", "Failed"):
        return previous  # its finished pods were deleted: the outcome stays
    if rejection is not None and rejection.cause == Cause.NO_POD_GROUP:
        rejection = None  # said of its pods before the PodGroup existed; not true of it now
    bound = sum(1 for pod in gang.placed if pod.spec.node_name)
    succeeded, failed = len(gang.succeeded), len(gang.failed)
    floor = max(gang.min_member, 1)
    finished = not gang.placed and not gang.pending and succeeded + failed > 0
    stands = gang.runs_whole and bound + succeeded >= floor  # (leaving members run until gone)
    if finished:
        phase = "Completed"
    elif stands:
        phase = "Running"
    elif admitted or gang.placed or shown:
        phase = "Inqueue"
    else:
        phase = "Pending"
    wanted: list[PodGroupCondition] = []
    earlier = find_condition(previous, UNSCHEDULABLE)
    if stands or finished or admitted:
        if earlier is not None:
            why = "gang stands" if stands or finished else "gang admitted: capacity reserved"
            wanted.append(_condition(UNSCHEDULABLE, "False", "Admitted", why))
    elif rejection is not None:
        reason = _REASONS.get(rejection.cause, rejection.cause)
        wanted.append(_condition(UNSCHEDULABLE, "True", reason, rejection.message))
    elif earlier is not None:
        wanted.append(earlier)  # no verdict yet (just restarted, or between two): keep the last
    if stands or (finished and succeeded >= floor):
        message = f"{bound + succeeded} of {gang.min_member} required members bound or done"
        wanted.append(_condition(SCHEDULED, "True", "GangScheduled", message))
    conditions = _merged(
        previous, [_stamped(c, find_condition(previous, c.type), now) for c in wanted]
    )
    return PodGroupStatus(
        phase=phase, conditions=conditions, running=bound, succeeded=succeeded, failed=failed
    )


def same_status(a: PodGroupStatus, b: PodGroupStatus) -> bool:
    """Equal but for condition timestamps (a rewrite of an equal status is not needed)."""

    def bare(status: PodGroupStatus) -> PodGroupStatus:
        conditions = [c.model_copy(update={"last_transition_time": ""}) for c in status.conditions]
        return status.model_copy(update={"conditions": conditions})

    return bare(a) == bare(b)


def events(before: PodGroupStatus, after: PodGroupStatus, gang_key: str) -> list[PodGroupEvent]:
    """The events a change of status from `before` to `after` deserves."""
    out: list[PodGroupEvent] = []
    if after.phase != before.phase:
        # Inqueue while still Unschedulable: shown to the scheduler for nodes, not admitted (its
        # condition says why, and no Admitted event is due)
        waits = find_condition(after, UNSCHEDULABLE)
        admitted = waits is None or waits.status != "True"
        if after.phase == "Inqueue" and before.phase in ("", "Pending") and admitted:
            out.append(PodGroupEvent("Normal", "Admitted", f"gang {gang_key}: capacity reserved"))
        elif after.phase == "Running":
            scheduled = find_condition(after, SCHEDULED)
            out.append(PodGroupEvent("Normal", "Scheduled", scheduled.message if scheduled else ""))
        elif (
            after.phase == "Completed" and after.failed and find_condition(after, SCHEDULED) is None
        ):
            message = f"{after.failed} members failed, {after.succeeded} succeeded"
            out.append(PodGroupEvent("Warning", "Failed", message))
        elif after.phase == "Completed":
            out.append(PodGroupEvent("Normal", "Completed", f"{after.succeeded} members succeeded"))
    now, then = find_condition(after, UNSCHEDULABLE), find_condition(before, UNSCHEDULABLE)
    said = (then.status, then.reason) if then is not None else None
    if now is not None and now.status == "True" and said != ("True", now.reason):
        # a new cause, not new figures
        out.append(PodGroupEvent("Warning", UNSCHEDULABLE, now.message))
    return out


def _condition(kind: str, status: str, reason: str, message: str) -> PodGroupCondition:
    return PodGroupCondition(type=kind, status=status, reason=reason, message=message)


def find_condition(status: PodGroupStatus, kind: str) -> PodGroupCondition | None:
    return next((c for c in status.conditions if c.type == kind), None)


def _merged(previous: PodGroupStatus, wanted: list[PodGroupCondition]) -> list[PodGroupCondition]:
    """The conditions to write: other writers' where they were, Lahar's replacing its own (or
    last when new); Lahar's that are no longer wanted go."""
    ours = {condition.type: condition for condition in wanted}
    merged: list[PodGroupCondition] = []
    for condition in previous.conditions:
        if condition.type in ours:
            merged.append(ours.pop(condition.type))
        elif condition.type not in (UNSCHEDULABLE, SCHEDULED):
            merged.append(condition)
    return merged + list(ours.values())


def _stamped(
    condition: PodGroupCondition, previous: PodGroupCondition | None, now: str
) -> PodGroupCondition:
    """Keep the previous transition time while the condition's status does not change."""
    if previous is not None and previous.status == condition.status:
        when = previous.last_transition_time or now
    else:
        when = now
    return condition.model_copy(update={"last_transition_time": when})
