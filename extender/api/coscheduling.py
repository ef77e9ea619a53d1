"""scheduler-plugins' Coscheduling PodGroup (`scheduling.x-k8s.io/v1alpha1`) as Lahar reads it.

Pods join one with the label `scheduling.x-k8s.io/pod-group: NAME` (in their namespace), so a
workload written for Coscheduling runs under Lahar with only its `schedulerName` changed. `as_gang`
reads the group into the gang model (`api.scheduling.PodGroup`): minMember and minResources as
Volcano's, the queue from the annotation `scheduling.volcano.sh/queue-name` (else `default`),
and the phase Coscheduling wrote mapped onto Volcano's, which queue counts read. Its status as the
API shows it is kept (`PodGroup.shown`) so that the status writer compares what it would write
against it. A minMember below 1 is a `problem`: the gang waits and its events say why.
`scheduleTimeoutSeconds`, how long Coscheduling lets members wait for each other at Permit, bounds
the wait at Lahar's bind barrier (never past the policy's barrier timeout, which stays below
kube-scheduler's extender timeout).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from extender.api.objects import KubeModel, ResourceList
from extender.api.resources import EMPTY
from extender.api.scheduling import (
    DEFAULT_QUEUE,
    QUEUE_ANNOTATION,
    GroupKind,
    GroupMeta,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
)

API_VERSION = GroupKind.COSCHEDULING.api_version

# Coscheduling's phases, as Volcano's: what queue counts read. Scheduling says only that minMember
# pods exist, admitted or not: Pending.
_PHASES = {
    "Pending": "Pending",
    "PreScheduling": "Pending",
    "Scheduling": "Pending",
    "Scheduled": "Running",
    "Running": "Running",
    "Succeeded": "Completed",
    "Failed": "Completed",
    "Finished": "Completed",
}


class CoschedulingSpec(KubeModel):
    min_member: int = 0
    min_resources: ResourceList = EMPTY
    schedule_timeout_seconds: int | None = None


class CoschedulingPodGroup(KubeModel):
    metadata: GroupMeta = GroupMeta()
    spec: CoschedulingSpec = CoschedulingSpec()
    status: dict[str, Any] = Field(default_factory=dict)

    def as_gang(self) -> PodGroup:
        meta = self.metadata
        problem = ""
        if self.spec.min_member < 1:
            problem = f"spec.minMember is {self.spec.min_member}: it must be at least 1"
        shown = self.status
        return PodGroup(
            metadata=meta,
            spec=PodGroupSpec(
                queue=meta.annotations.get(QUEUE_ANNOTATION) or DEFAULT_QUEUE,
                min_member=max(self.spec.min_member, 1),
                min_resources=self.spec.min_resources,
            ),
            status=PodGroupStatus(
                phase=volcano_phase(shown),
                running=_count(shown, "running"),
                succeeded=_count(shown, "succeeded"),
                failed=_count(shown, "failed"),
            ),
            group_kind=GroupKind.COSCHEDULING,
            problem=problem,
            shown=shown,
            gather_timeout=self.spec.schedule_timeout_seconds or None,
        )


def volcano_phase(status: dict[str, Any]) -> str:
    """The Volcano phase a Coscheduling status reads as ("" when it has none)."""
    return _PHASES.get(str(status.get("phase", "")), "")


def _count(status: dict[str, Any], field: str) -> int:
    value = status.get(field)
    return value if isinstance(value, int) else 0
