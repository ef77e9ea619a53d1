"""What each kind of PodGroup shows of its gang's status, in that kind's own fields.

`server.group_status` derives one status for every gang in Volcano's terms (phase, counts,
Unschedulable and Scheduled conditions). A Volcano PodGroup shows it as it is. The other kinds
show it as their users' tools expect:

- Coscheduling's PodGroup (`scheduling.x-k8s.io`): phase and counts as scheduler-plugins'
  PodGroup controller writes them (`server.coscheduling_status`); its schema has no conditions, so
  why a gang waits is said by Events and `lahar explain`.
- Kubernetes' native PodGroup (`scheduling.k8s.io`): one condition of Lahar's own,
  `lahar.io/GangScheduled` (`metav1.Condition`): True once the gang stands or finished whole;
  False while it waits, its reason the cause (`NotEnoughResources`, `InvalidPodGroup`, ...) or
  the phase (`Pending`, `Inqueue`), its message what the Unschedulable condition says. It is
  sent alone, as a strategic merge patch keyed by type, so the conditions kube-scheduler writes
  (`PodGroupInitiallyScheduled`) stay as they are.

`shown_status` gives the status a kind's group should show; `status_patch` the patch that makes
it so (None when the API shows it already, so an unchanged status is not written again).
"""

from __future__ import annotations

from typing import Any

from extender.api.native_groups import CONDITION, PHASES, lahars_condition
from extender.api.scheduling import GroupKind, PodGroupStatus
from extender.framework.engine import GangView
from extender.server.coscheduling_status import (
    coscheduling_status,
    coscheduling_status_patch,
    occupied_by,
)
from extender.server.group_status import SCHEDULED, UNSCHEDULABLE, find_condition


def shown_status(
    kind: GroupKind,
    derived: PodGroupStatus,
    gang: GangView,
    *,
    admitted: bool,
    shown: dict[str, Any],
    now: str,
) -> dict[str, Any]:
    """The `status` a group of `kind` should show for the gang whose status is `derived`
    (`shown`: the status its API shows now)."""
    if kind is GroupKind.VOLCANO:
        return derived.model_dump(by_alias=True, mode="json")
    if kind is GroupKind.COSCHEDULING:
        return coscheduling_status(
            pending=len(gang.pending),
            placed=len(gang.placed),
            bound=derived.running,
            succeeded=derived.succeeded,
            failed=derived.failed,
            min_member=gang.min_member,
            admitted=admitted,
            occupied_by=gang_owners(gang),
            previous=shown,
            now=now,
        )
    return {"conditions": [native_condition(derived, gang, shown, now)]}


def gang_owners(gang: GangView) -> str:
    """`occupiedBy` of the gang's group: the owners of one of its members, as Coscheduling
    writes them (`coscheduling_status.occupied_by`); "" when it has no member."""
    for pod in gang.placed + gang.pending + gang.succeeded + gang.failed:
        meta = pod.metadata
        return occupied_by(meta.namespace, meta.owner_names)
    return ""


def native_condition(
    derived: PodGroupStatus, gang: GangView, shown: dict[str, Any], now: str
) -> dict[str, Any]:
    """Lahar's condition on a native PodGroup (see the module's docstring)."""
    waiting = find_condition(derived, UNSCHEDULABLE)
    scheduled = find_condition(derived, SCHEDULED)
    if scheduled is not None:
        status, reason, message = "True", derived.phase or "Running", scheduled.message
    elif waiting is not None and waiting.status == "True":
        status, reason, message = "False", waiting.reason, waiting.message
    else:
        phase = derived.phase if derived.phase in PHASES else "Pending"
        status, reason = "False", phase
        message = (
            f"gang admitted: capacity reserved for {gang.min_member} members"
            if phase == "Inqueue"
            else f"{gang.ready} of {gang.min_member} required members placed"
        )
    before = lahars_condition(shown)
    since = now
    if before is not None and before.get("status") == status and before.get("lastTransitionTime"):
        since = str(before["lastTransitionTime"])
    return {
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


def status_patch(
    kind: GroupKind, wanted: dict[str, Any], shown: dict[str, Any]
) -> dict[str, Any] | None:
    """The patch of `status` that makes a group of Coscheduling's or the native kind whose API
    shows `shown` show `wanted`; None when it does already (for a native group, Lahar's
    condition is compared, its time aside)."""
    if kind is GroupKind.COSCHEDULING:
        return coscheduling_status_patch(shown, wanted)
    condition = lahars_condition(shown)
    if condition is not None and _bare(condition) == _bare(wanted["conditions"][0]):
        return None
    return wanted


def _bare(condition: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in condition.items() if key != "lastTransitionTime"}
