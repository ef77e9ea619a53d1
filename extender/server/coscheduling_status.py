"""A Coscheduling PodGroup's status (`scheduling.x-k8s.io/v1alpha1`), as scheduler-plugins' PodGroup
controller would write it for the gang Lahar sees.

Upstream (scheduler-plugins `pkg/controllers/podgroup_controller.go`, `Reconcile`) moves the phase
one step per reconcile, and its own status patch makes it reconcile again, so what a reader sees
once it settles is the fixed point of that step. `coscheduling_status` computes that fixed point
(`_step` is one reconcile), from these inputs:

- members: every pod of the gang, `pending + placed + succeeded + failed` (`placed` counts those
  on a node, bound or assumed by Lahar's bind; `bound`, a part of them, those with a nodeName).
  Upstream counts every pod with the label, in any phase.
- running: upstream counts pods in phase Running; Lahar counts its bound members, as it does for
  Volcano's `status.running` (a pod whose containers are still starting counts already).

One step, by the phase written before:

- "" -> Pending (nothing else written).
- Pending -> Scheduling once members >= minMember, and `occupiedBy` is written then (only then,
  and only when the pod it is taken from has owners); the counts stay as they were.
- any other phase (Scheduling, Running, Unknown, or an earlier release's PreScheduling and
  Scheduled): the counts are written; Pending if members < minMember, else Scheduling while
  running + succeeded < minMember and Running from there; then Failed if any member failed and
  failed + running + succeeded >= minMember; then Finished if succeeded >= minMember.
- Finished and Failed are final: nothing changes any more.

So a PodGroup without minMember (0) is Finished as soon as it exists, as upstream has it.

`scheduleStartTime`: the upstream controller never writes it (the plugin's PostBind did, at the
first bind, until v0.26). Lahar stamps `now` once the gang is admitted or has a member placed,
and keeps it from then on. Values are as on the wire: camelCase keys, zero counts and empty
strings left out (Go's `omitempty`). `coscheduling_status_patch` turns a change into the merge
patch that writes it (a count gone to zero is removed with null).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
FINAL = frozenset({FINISHED, FAILED})

# The status's fields in the order Coscheduling's types declare them.
FIELDS = ("phase", "occupiedBy", "running", "succeeded", "failed", "scheduleStartTime")
# "" -> Pending -> Scheduling -> where the counts lead, and one more step to see it settled.
_MAX_STEPS = 4


@dataclass(frozen=True)
class _Status:
    phase: str = ""
    occupied_by: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: str = ""

    @classmethod
    def read(cls, status: dict[str, Any]) -> _Status:
        return cls(
            phase=str(status.get("phase") or ""),
            occupied_by=str(status.get("occupiedBy") or ""),
            running=int(status.get("running") or 0),
            succeeded=int(status.get("succeeded") or 0),
            failed=int(status.get("failed") or 0),
            schedule_start_time=str(status.get("scheduleStartTime") or ""),
        )

    def wire(self) -> dict[str, Any]:
        values = (
            self.phase,
            self.occupied_by,
            self.running,
            self.succeeded,
            self.failed,
            self.schedule_start_time,
        )
        return {field: value for field, value in zip(FIELDS, values, strict=True) if value}


@dataclass(frozen=True)
class _Gang:
    members: int
    running: int
    succeeded: int
    failed: int
    min_member: int
    occupied_by: str


def coscheduling_status(
    *,
    pending: int,
    placed: int,
    bound: int,
    succeeded: int,
    failed: int,
    min_member: int,
    admitted: bool,
    occupied_by: str,
    previous: dict[str, Any],
    now: str,
) -> dict[str, Any]:
    """The `status` Coscheduling's controller would settle on for a gang with these members,
    `previous` being the status written before; `occupied_by` is `occupied_by(...)` of one member
    (upstream takes the first pod its cache lists), "" when unknown."""
    counts = {"pending": pending, "placed": placed, "bound": bound}
    counts |= {"succeeded": succeeded, "failed": failed, "min_member": min_member}
    if negative := [name for name, value in counts.items() if value < 0]:
        raise ValueError(f"counts cannot be negative: {', '.join(negative)}")
    if bound > placed:
        raise ValueError(f"bound ({bound}) is a part of placed ({placed})")
    before = _Status.read(previous)
    if before.phase in FINAL:
        return before.wire()
    gang = _Gang(
        members=pending + placed + succeeded + failed,
        running=bound,
        succeeded=succeeded,
        failed=failed,
        min_member=min_member,
        occupied_by=occupied_by,
    )
    status = before
    for _ in range(_MAX_STEPS):
        after = _step(status, gang)
        if after == status:
            break
        status = after
    if not status.schedule_start_time and (admitted or placed):
        status = replace(status, schedule_start_time=now)
    return status.wire()


def _step(status: _Status, gang: _Gang) -> _Status:
    """One reconcile of Coscheduling's PodGroup controller."""
    if status.phase in FINAL:
        return status
    if status.phase == "":
        return replace(status, phase=PENDING)
    if status.phase == PENDING:
        if gang.members < gang.min_member:
            return status
        owners = gang.occupied_by if gang.members and gang.occupied_by else status.occupied_by
        return replace(status, phase=SCHEDULING, occupied_by=owners)
    counted = replace(status, running=gang.running, succeeded=gang.succeeded, failed=gang.failed)
    if gang.members < gang.min_member:
        return replace(counted, phase=PENDING)
    done = gang.running + gang.succeeded
    phase = RUNNING if done >= gang.min_member else SCHEDULING
    if gang.failed and gang.failed + done >= gang.min_member:
        phase = FAILED
    if gang.succeeded >= gang.min_member:
        phase = FINISHED
    return replace(counted, phase=phase)


def occupied_by(namespace: str, owner_names: Iterable[str]) -> str:
    """`status.occupiedBy` for a pod of `namespace` with owners of these names, as Coscheduling
    writes it (`fillOccupiedObj`): "namespace/name" per owner reference, sorted, joined by commas.
    The owners' kinds and UIDs are not in it; "" for a pod without owners."""
    return ",".join(sorted(f"{namespace}/{name}" for name in owner_names))


def coscheduling_status_patch(
    written: dict[str, Any], wanted: dict[str, Any]
) -> dict[str, Any] | None:
    """The merge patch of the `status` that makes `written` into `wanted` (both as
    `coscheduling_status` returns them): a field left out of `wanted` is removed (null); None when
    nothing changes. Fields other writers added to `written` are left alone."""
    patch: dict[str, Any] = {
        field: wanted.get(field) for field in FIELDS if wanted.get(field) != written.get(field)
    }
    return patch or None
