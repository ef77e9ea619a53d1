"""Kubernetes' native PodGroup (`scheduling.k8s.io/v1beta1`, beta in 1.37) as Lahar reads it.

A pod joins one through `spec.schedulingGroup.podGroupName` (in its namespace); the group's
`schedulingPolicy` is either `gang` (`minCount` pods placed together) or `basic` (each pod on its
own). `as_gang` reads the group into the gang model (`api.scheduling.PodGroup`): a gang policy's
minCount is minMember, a basic policy is a gang of one (its pods still queue and share fairly),
the queue comes from the annotation `scheduling.volcano.sh/queue-name` (else `default`) and the
priority class from `spec.priorityClassName`. Native PodGroups have no phase: Lahar reports a
gang's state in one condition of its own (`gangs.native_status`), kept in `PodGroup.shown` as
the API shows it, and the phase queue counts read is derived from it. A group with neither policy,
or a minCount below 1, is a `problem`: the gang waits and its condition says why.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from extender.api.objects import KubeModel
from extender.api.scheduling import (
    DEFAULT_QUEUE,
    QUEUE_ANNOTATION,
    GroupKind,
    GroupMeta,
    PodGroup,
    PodGroupCondition,
    PodGroupSpec,
    PodGroupStatus,
)

API_VERSION = GroupKind.NATIVE.api_version
CONDITION = "lahar.io/GangScheduled"  # the condition Lahar writes (`gangs.native_status`)


class GangPolicy(KubeModel):
    min_count: int = 0


class SchedulingPolicy(KubeModel):
    basic: dict[str, Any] | None = None
    gang: GangPolicy | None = None


class NativeSpec(KubeModel):
    scheduling_policy: SchedulingPolicy = SchedulingPolicy()
    priority_class_name: str = ""
    priority: int | None = None  # set by the API server from the class, as a pod's is


class NativePodGroup(KubeModel):
    metadata: GroupMeta = GroupMeta()
    spec: NativeSpec = NativeSpec()
    status: dict[str, Any] = Field(default_factory=dict)

    def as_gang(self) -> PodGroup:
        meta, policy = self.metadata, self.spec.scheduling_policy
        problem = ""
        if policy.gang is not None:
            min_member = policy.gang.min_count
            if min_member < 1:
                problem = (
                    f"spec.schedulingPolicy.gang.minCount is {min_member}: it must be at least 1"
                )
        elif policy.basic is not None:
            min_member = 1
        else:
            min_member = 1
            problem = "spec.schedulingPolicy: neither gang nor basic is set"
        return PodGroup(
            metadata=meta,
            spec=PodGroupSpec(
                queue=meta.annotations.get(QUEUE_ANNOTATION) or DEFAULT_QUEUE,
                min_member=max(min_member, 1),
                priority_class_name=self.spec.priority_class_name,
            ),
            status=read_status(self.status),
            group_kind=GroupKind.NATIVE,
            problem=problem,
            own_priority=self.spec.priority,
            shown=self.status,
        )


PHASES = ("Pending", "Inqueue", "Running", "Completed")


def volcano_phase(status: dict[str, Any]) -> str:
    """The Volcano phase Lahar's own condition last reported: its reason, or Pending when the
    reason says why the gang waits; "" when there is no such condition."""
    condition = lahars_condition(status)
    if condition is None:
        return ""
    reason = condition.get("reason")
    return reason if reason in PHASES else "Pending"


def read_status(status: dict[str, Any]) -> PodGroupStatus:
    """Lahar's condition read back as the status it was derived from: the phase, and why the gang
    waits as Volcano's Unschedulable condition (so a restarted extender does not record the same
    Unschedulable event again)."""
    condition = lahars_condition(status)
    if condition is None or condition.get("status") != "False":
        return PodGroupStatus(phase=volcano_phase(status))
    reason = str(condition.get("reason") or "")
    if reason in PHASES:
        return PodGroupStatus(phase=reason)
    waiting = PodGroupCondition(
        type="Unschedulable",
        status="True",
        reason=reason,
        message=str(condition.get("message") or ""),
        last_transition_time=str(condition.get("lastTransitionTime") or ""),
    )
    return PodGroupStatus(phase="Pending", conditions=[waiting])


def lahars_condition(status: dict[str, Any]) -> dict[str, Any] | None:
    """Lahar's condition (`CONDITION`) in a native PodGroup's status, None when it has none."""
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == CONDITION:
            return condition
    return None
