"""Volcano's scheduling API as Lahar reads it: PodGroup and Queue (`scheduling.volcano.sh/v1beta1`).

A pod joins a PodGroup through the annotation `scheduling.k8s.io/group-name` (in the pod's
namespace) and a task through `volcano.sh/task-spec`; `gang_key` and `task_of` read them. Only the
fields Lahar's policies read are modelled; resource lists parse exactly as a pod's do, so a bad
quantity in `minResources` is an error naming that field.

A gang's pods are created with the scheduling gate `lahar.io/gang` (by the Job controller, and by
the admission webhook for pods others create) and Lahar lifts it when it admits their gang, so a
gang's members enter kube-scheduler's queue together and pods of gangs that cannot run yet cost
the scheduler nothing. `held_by_lahar` tells such a pod.
"""

from __future__ import annotations

import logging
from functools import cached_property

from pydantic import Field

from extender.api.duration import parse_duration
from extender.api.objects import KubeModel, ObjectMeta, Pod, ResourceList
from extender.api.resources import EMPTY

API_VERSION = "scheduling.volcano.sh/v1beta1"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_ANNOTATION = "volcano.sh/task-spec"
DEFAULT_QUEUE = "default"
SLA_ANNOTATION = "sla-waiting-time"  # Volcano's per-job starvation limit, a Go duration
GANG_GATE = "lahar.io/gang"  # the scheduling gate Lahar lifts when it admits the pod's gang

log = logging.getLogger(__name__)


class PodGroupRefSpec(KubeModel):
    queue: str = DEFAULT_QUEUE


class PodGroupRef(KubeModel):
    """A PodGroup by name and queue only, for readers that need no more (the webhook): one whose
    other fields do not parse still names its queue."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupRefSpec = PodGroupRefSpec()

    @property
    def key(self) -> str:
        return self.metadata.key

    @property
    def queue(self) -> str:
        return self.spec.queue or DEFAULT_QUEUE


class PodGroupSpec(PodGroupRefSpec):
    min_member: int = 0
    min_task_member: dict[str, int] = Field(default_factory=dict)
    priority_class_name: str = ""
    min_resources: ResourceList = EMPTY


class PodGroupCondition(KubeModel):
    type: str = ""
    status: str = ""
    transition_id: str = Field(default="", alias="transitionID")  # (Volcano's spelling)
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


class PodGroupStatus(KubeModel):
    phase: str = ""
    conditions: list[PodGroupCondition] = Field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PodGroup(PodGroupRef):
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus = PodGroupStatus()

    @cached_property
    def sla_waiting_time(self) -> float | None:
        """Seconds its annotation `sla-waiting-time` allows it to wait (None when not set, or
        not a positive duration: then the policy's limit applies, and the log says why, once)."""
        text = self.metadata.annotations.get(SLA_ANNOTATION)
        if text is None:
            return None
        try:
            seconds = parse_duration(text)
        except ValueError as error:
            log.warning("PodGroup %s: annotation %s ignored: %s", self.key, SLA_ANNOTATION, error)
            return None
        return seconds if seconds > 0 else None


class Guarantee(KubeModel):
    resource: ResourceList = EMPTY


class QueueSpec(KubeModel):
    weight: int = Field(default=1, ge=1)
    capability: ResourceList = EMPTY  # a resource not named is not capped
    deserved: ResourceList = EMPTY  # a resource not named is water-filled
    guarantee: Guarantee = Guarantee()
    reclaimable: bool = True
    priority: int = 0
    parent: str = ""


class QueueStatus(KubeModel):
    state: str = ""  # Open | Closed | Closing | Unknown; unset reads as Open
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    completed: int = 0
    unknown: int = 0
    allocated: ResourceList = EMPTY


class Queue(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    spec: QueueSpec = QueueSpec()
    status: QueueStatus = QueueStatus()

    @property
    def open(self) -> bool:
        """Whether new work may enter: a Closed or Closing queue admits nothing new."""
        return self.status.state not in ("Closed", "Closing")


def default_queue() -> Queue:
    """The queue a PodGroup without one goes to, as Lahar creates it when it is missing."""
    return Queue(metadata=ObjectMeta(name=DEFAULT_QUEUE), spec=QueueSpec(reclaimable=True))


def gang_key(pod: Pod) -> str | None:
    """`namespace/podgroup` of the pod's gang, or None for a pod that is a gang of one."""
    name = pod.metadata.annotations.get(GROUP_ANNOTATION)
    return f"{pod.metadata.namespace}/{name}" if name else None


def task_of(pod: Pod) -> str:
    return pod.metadata.annotations.get(TASK_ANNOTATION, "")


def held_by_lahar(pod: Pod) -> bool:
    """The pod waits for Lahar alone: its only scheduling gate is Lahar's (`GANG_GATE`)."""
    gates = pod.spec.scheduling_gates
    return bool(gates) and all(gate.name == GANG_GATE for gate in gates)
