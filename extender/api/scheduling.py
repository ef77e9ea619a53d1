"""Volcano's scheduling API as Lahar reads it: PodGroup and Queue (`scheduling.volcano.sh/v1beta1`),
and the one gang model every kind of PodGroup is read into.

A pod joins a Volcano PodGroup through the annotation `scheduling.k8s.io/group-name` (in the pod's
namespace) and a task through `volcano.sh/task-spec`; `gang_key` and `task_of` read them. Only the
fields Lahar's policies read are modelled; resource lists parse exactly as a pod's do, so a bad
quantity in `minResources` is an error naming that field.

Two more kinds of PodGroup are gangs too (`GroupKind`): scheduler-plugins' Coscheduling PodGroups
(`api.coscheduling`: pods labelled `scheduling.x-k8s.io/pod-group`) and Kubernetes' native ones
(`api.native_groups`: a pod's `spec.schedulingGroup`). Each is read into this module's `PodGroup`,
which carries its `group_kind`, and a gang's key names the kind unless it is Volcano's:
`namespace/name` for Volcano, `namespace/podgroups.scheduling.x-k8s.io/name` for the others (what
kubectl takes), so two kinds' groups of one name never meet. A group the engine cannot take as it
is (minMember below 1) carries its `problem`, which the gang's condition says.

A gang's pods reach kube-scheduler only once Lahar admits the gang, so that its members enter the
scheduler's queue together and pods of gangs that cannot run yet cost the scheduler nothing: a
Volcano Job's pods are created once its PodGroup leaves Pending (`api.job_pods`); pods others
create carry the scheduling gate `lahar.io/gang` (the admission webhook adds it), which Lahar
lifts when it admits their gang. `held_by_lahar` tells such a pod.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field

from extender.api.duration import parse_duration
from extender.api.log_fields import about_gang
from extender.api.objects import KubeModel, MinResources, ObjectMeta, Pod, ResourceList
from extender.api.resources import EMPTY
from extender.api.schema import Count, Crd, Int32, Opaque, Time

API_VERSION = "scheduling.volcano.sh/v1beta1"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_ANNOTATION = "volcano.sh/task-spec"
DEFAULT_QUEUE = "default"
SLA_ANNOTATION = "sla-waiting-time"  # Volcano's per-job starvation limit, a Go duration
VOLCANO_SCHEDULER = "volcano"  # the schedulerName of Volcano's own scheduler
# The schedulerNames Lahar serves unless told others: the profiles of
# policy/kube-scheduler-config.yaml (Volcano's name among them, so Volcano's YAML runs as is).
SERVED_SCHEDULERS = ("lahar", VOLCANO_SCHEDULER)
GANG_GATE = "lahar.io/gang"  # the scheduling gate Lahar lifts when it admits the pod's gang

log = logging.getLogger(__name__)


class GroupKind(StrEnum):
    """The kinds of PodGroup Lahar schedules as gangs, each by its resource name as kubectl
    takes it."""

    VOLCANO = "podgroups.scheduling.volcano.sh"
    COSCHEDULING = "podgroups.scheduling.x-k8s.io"
    NATIVE = "podgroups.scheduling.k8s.io"

    @property
    def api_version(self) -> str:
        return _API_VERSIONS[self]

    def key(self, namespace: str, name: str) -> str:
        """The gang key of this kind's group `namespace/name`."""
        if self is GroupKind.VOLCANO:
            return f"{namespace}/{name}"
        return f"{namespace}/{self.value}/{name}"


_API_VERSIONS = {
    GroupKind.VOLCANO: API_VERSION,
    GroupKind.COSCHEDULING: "scheduling.x-k8s.io/v1alpha1",
    GroupKind.NATIVE: "scheduling.k8s.io/v1beta1",
}
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"  # the queue of a group of another kind


class PodGroupRefSpec(KubeModel):
    queue: Annotated[str, Crd(default=DEFAULT_QUEUE)] = DEFAULT_QUEUE
    """The Queue the group is scheduled from."""


class GroupMeta(ObjectMeta):
    """A group's metadata, with when it was made (which a pod's leaves out: a field per pod in a
    cache of every pod): how long its gang waited is counted from then (`server.metrics`)."""

    creation_timestamp: Time = ""


class PodGroupRef(KubeModel):
    """A PodGroup by name and queue only, for readers that need no more (the webhook): one whose
    other fields do not parse still names its queue."""

    metadata: GroupMeta = GroupMeta()
    spec: PodGroupRefSpec = PodGroupRefSpec()

    @property
    def key(self) -> str:
        return self.metadata.key

    @property
    def queue(self) -> str:
        return self.spec.queue or DEFAULT_QUEUE


class NetworkTopology(KubeModel):
    """How far apart in the network a group's pods may be placed (Volcano's HyperNode tiers)."""

    mode: Annotated[Literal["hard", "soft"], Crd(default="hard")] = "hard"
    """hard: the pods must stay within the tier; soft: they should."""
    highest_tier_allowed: Annotated[int, Crd(minimum=0)] | None = None
    """The highest tier the pods may span (not with highestTierName)."""
    highest_tier_name: str | None = None
    """The name of the highest tier the pods may span (not with highestTierAllowed)."""


class SubGroupPolicy(KubeModel):
    """Pods of a PodGroup placed as sub-groups (Volcano's `subGroupPolicy`; its Job controller
    makes one per task with a partition policy)."""

    name: str = ""
    """The policy's name (the task's, when the Job controller made it)."""
    network_topology: NetworkTopology | None = None
    """The network topology each sub-group's pods must stay within."""
    sub_group_size: Annotated[Int32, Crd(minimum=1, default=1)] | None = None
    """The pods of each sub-group."""
    min_sub_groups: Annotated[Int32, Crd(minimum=0, default=0)] | None = None
    """Sub-groups that must be placeable before any is."""
    label_selector: Annotated[Opaque, Crd(map_type="atomic")] | None = None
    """The pods the policy applies to (a LabelSelector)."""
    match_label_keys: Annotated[list[str], Crd(list_type="atomic")] | None = None
    """Labels whose values split the selected pods into sub-groups."""


class PodGroupSpec(PodGroupRefSpec):
    min_member: Annotated[Int32, Crd(minimum=0)] = 0
    """Pods that must be placeable together before any of them is bound."""
    min_task_member: dict[str, Annotated[Int32, Crd(minimum=0)]] = Field(default_factory=dict)
    """Per task (annotation volcano.sh/task-spec), the pods needed of it."""
    priority_class_name: str = ""
    """The PriorityClass of the group."""
    min_resources: MinResources = EMPTY
    """Resources the gang needs at least, as a ResourceList."""
    # Volcano's network-topology fields (the Job controller copies them from the Job), honoured
    # by placement (`gangs.topology`). None when unset, so a group without them costs the cache
    # nothing more.
    network_topology: NetworkTopology | None = None
    """The network topology the group's pods must stay within."""
    sub_group_policy: list[SubGroupPolicy] | None = None
    """Pods of the group placed as sub-groups, each within a network topology."""


GROUP_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed", "Failed")
OPEN, CLOSING, CLOSED = "Open", "Closing", "Closed"
QUEUE_STATES = (OPEN, CLOSED, CLOSING, "Unknown")
ROOT = "root"  # the queue at the top of the tree: every queue without a parent is its child


class PodGroupCondition(KubeModel):
    type: str = ""
    status: str = ""
    transition_id: str = Field(default="", alias="transitionID")  # (Volcano's spelling)
    reason: str = ""
    message: str = ""
    last_transition_time: Time = ""


class PodGroupStatus(KubeModel):
    phase: Annotated[str, Crd(enum=GROUP_PHASES)] = ""
    conditions: list[PodGroupCondition] = Field(default_factory=list)
    running: Count = 0
    succeeded: Count = 0
    failed: Count = 0


class PodGroup(PodGroupRef):
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus = PodGroupStatus()
    # What the gang engine needs that is not Volcano's wire format: the kind the group was read
    # from, why the engine cannot take it as it is ("" when it can), and, for other kinds, the
    # status as their API shows it (compared against before a write). Never sent back.
    group_kind: GroupKind = Field(default=GroupKind.VOLCANO, exclude=True)
    problem: str = Field(default="", exclude=True)
    # How long its members may wait for each other at the bind barrier at most (Coscheduling's
    # scheduleTimeoutSeconds); None: the policy's barrier timeout.
    gather_timeout: float | None = Field(default=None, exclude=True)
    # The priority the group states itself (a native PodGroup's `spec.priority`), which its pods
    # must have; None: it states none.
    own_priority: int | None = Field(default=None, exclude=True)
    shown: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @property
    def key(self) -> str:
        return self.group_kind.key(self.metadata.namespace, self.metadata.name)

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
            log.warning(
                "PodGroup %s: annotation %s ignored: %s",
                self.key,
                SLA_ANNOTATION,
                error,
                extra=about_gang(self.key),
            )
            return None
        return seconds if seconds > 0 else None


class Guarantee(KubeModel):
    resource: ResourceList = EMPTY
    """Resources held for the queue whether it uses them or not."""


class Cluster(KubeModel):
    """A cluster a queue's jobs may be dispatched to (Volcano's multi-cluster scheduling)."""

    name: str = ""
    weight: Int32 = 0
    capacity: ResourceList = EMPTY


class NodeGroupAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    """Node groups (label volcano.sh/nodegroup-name) the queue's pods must run in."""
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None
    """Node groups the queue's pods should run in."""


class NodeGroupAntiAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    """Node groups the queue's pods must not run in."""
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None
    """Node groups the queue's pods should not run in."""


class QueueAffinity(KubeModel):
    """Where a queue's pods run, by node group (Volcano's nodegroup plugin)."""

    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAntiAffinity | None = None


class QueueSpec(KubeModel):
    weight: Annotated[Int32, Crd(maximum=65535, default=1)] = Field(default=1, ge=1)
    """The queue's share of the cluster, relative to the other queues' weights."""
    capability: ResourceList = EMPTY
    """Resources the queue may use at most (a resource not named is not capped)."""
    deserved: ResourceList = EMPTY
    """Resources the queue deserves (a resource not named is water-filled)."""
    guarantee: Guarantee = Guarantee()
    """Resources held for the queue."""
    reclaimable: Annotated[bool, Crd(default=True)] = True
    """Whether other queues may reclaim what the queue uses beyond what it deserves."""
    priority: Annotated[Int32, Crd(minimum=0)] = 0
    """Higher goes first, and is reclaimed from last."""
    parent: str = ""
    """The parent queue (hierarchical queues)."""
    # Volcano's fields Lahar does not act on (the webhook warns): None when unset.
    extend_clusters: list[Cluster] | None = None
    """Clusters the queue's jobs may be dispatched to."""
    affinity: QueueAffinity | None = None
    """Node groups the queue's pods run in, or not."""
    queue_type: str | None = Field(default=None, alias="type")
    """The queue's type."""
    dequeue_strategy: Annotated[Literal["fifo", "traverse"], Crd(default="traverse")] | None = None
    """fifo: a job that cannot be placed blocks the jobs behind it; traverse: they may pass it."""


class Reservation(KubeModel):
    nodes: list[str] | None = None
    """Nodes locked for the queue."""
    resource: ResourceList = EMPTY
    """The idle resources of the locked nodes."""


class QueueStatus(KubeModel):
    state: Annotated[str, Crd(enum=QUEUE_STATES)] = ""
    """Open, Closed, Closing or Unknown; unset reads as Open."""
    pending: Count = 0
    inqueue: Count = 0
    running: Count = 0
    completed: Count = 0
    unknown: Count = 0
    reservation: Reservation | None = None
    """Volcano's resource reservation for the queue."""
    allocated: ResourceList = EMPTY
    """What the queue's bound pods request (a parent's: its whole subtree's)."""
    deserved: ResourceList = EMPTY
    """The queue's fair share now (Lahar's; Volcano's schema has no such field)."""


class Queue(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    spec: QueueSpec = QueueSpec()
    status: QueueStatus = QueueStatus()

    @property
    def open(self) -> bool:
        """Whether new work may enter: a Closed or Closing queue admits nothing new."""
        return self.status.state not in (CLOSED, CLOSING)


def default_queue() -> Queue:
    """The queue a PodGroup without one goes to, as Lahar creates it when it is missing."""
    return Queue(metadata=ObjectMeta(name=DEFAULT_QUEUE), spec=QueueSpec(reclaimable=True))


def gang_key(pod: Pod) -> str | None:
    """The key of the pod's gang (`GroupKind.key`), or None for a pod that is a gang of one. A
    pod that names groups of several kinds belongs to the first of Volcano's annotation, the
    Coscheduling label and `spec.schedulingGroup` (`group_names` tells such a pod)."""
    namespace = pod.metadata.namespace
    name = pod.metadata.annotations.get(GROUP_ANNOTATION)
    if name:
        return f"{namespace}/{name}"
    name = pod.metadata.labels.get(COSCHEDULING_LABEL)
    if name:
        return GroupKind.COSCHEDULING.key(namespace, name)
    group = pod.spec.scheduling_group
    if group is not None and group.pod_group_name:
        return GroupKind.NATIVE.key(namespace, group.pod_group_name)
    return None


def group_names(pod: Pod) -> dict[str, str]:
    """Each field through which the pod names a group, and the name it gives."""
    group = pod.spec.scheduling_group
    return named_groups(
        pod.metadata.annotations, pod.metadata.labels, group.pod_group_name if group else None
    )


def named_groups(
    annotations: Mapping[str, Any], labels: Mapping[str, Any], pod_group_name: Any
) -> dict[str, str]:
    """Of a pod's annotations, labels and `spec.schedulingGroup.podGroupName` (as parsed, or raw
    as the webhook reads them), each field that names a group, and the name it gives."""
    names = {
        f"metadata.annotations[{GROUP_ANNOTATION}]": annotations.get(GROUP_ANNOTATION),
        f"metadata.labels[{COSCHEDULING_LABEL}]": labels.get(COSCHEDULING_LABEL),
        "spec.schedulingGroup.podGroupName": pod_group_name,
    }
    return {field: name for field, name in names.items() if isinstance(name, str) and name}


def naming_conflict(pod: Pod) -> str | None:
    """Why the pod cannot be placed as a member of any one group: it names two different
    groups (a Volcano annotation and a Coscheduling label, say); None when it does not."""
    names = group_names(pod)
    if len(set(names.values())) <= 1:
        return None
    said = ", ".join(f"{field} names {name!r}" for field, name in names.items())
    return f"pod {pod.metadata.key}: {said}; a pod belongs to one group"


def task_of(pod: Pod) -> str:
    return pod.metadata.annotations.get(TASK_ANNOTATION, "")


def held_by_lahar(pod: Pod) -> bool:
    """The pod waits for Lahar alone: its only scheduling gate is Lahar's (`GANG_GATE`)."""
    gates = pod.spec.scheduling_gates
    return bool(gates) and all(gate.name == GANG_GATE for gate in gates)


def stray_gate(pod: Pod) -> bool:
    """The pod waits for Lahar alone but names no group Lahar reads, so nothing would ever lift
    its gate: a field the webhook saw was dropped on creation (`spec.schedulingGroup` on a
    cluster without the native gang API), or the group annotation was removed."""
    return held_by_lahar(pod) and gang_key(pod) is None and not pod.spec.node_name
