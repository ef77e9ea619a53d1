"""The fields of Pods and Nodes that Lahar's policies read, as typed models.

Models parse Kubernetes' camelCase JSON (from the scheduler's requests and from watches), ignore
every field Lahar does not read, and turn ResourceLists into `Resources` at parse time, so a
malformed quantity is an error naming its field before any policy runs.

`Pod.request` is Kubernetes' effective pod request, as the scheduler's NodeResourcesFit computes it:
the sum of the app containers and of the sidecars (init containers with `restartPolicy: Always`),
or, if larger, what any one init container needs next to the sidecars started before it; pod-level
`spec.resources.requests` replace the container sums for the resources they name; `spec.overhead`
is added; and one `pods` slot.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainSerializer, PlainValidator, field_validator

from extender.api.affinity import Affinity
from extender.api.model import Interned, InternedMap, KubeModel, Shared
from extender.api.resources import EMPTY, ONE_POD, Resources

__all__ = [
    "KubeModel",
    "MinResources",
    "Node",
    "Pod",
    "PriorityClass",
    "ResourceList",
    "Taint",
    "Toleration",
]


def _resources(value: Any) -> Resources:
    if isinstance(value, Resources):
        return value
    if value is None:
        return EMPTY
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping of resource name to quantity, got {value!r}")
    return Resources.parse(value)


ResourceList = Annotated[
    Resources,
    PlainValidator(_resources),
    PlainSerializer(Resources.quantities, return_type=dict[str, str]),  # as the API writes it
]


# Names a ResourceQuota counts usage by, not names of resources: Volcano's job controller fills a
# PodGroup's minResources from its pods' quota usage (`count/pods`, `requests.cpu`, `limits.memory`
# beside `pods`, `cpu`, `memory`), and Volcano's scheduler reads only the resources themselves.
QUOTA_USAGE_PREFIXES = ("count/", "requests.", "limits.")


def _min_resources(value: Any) -> Resources:
    if isinstance(value, dict):
        value = {n: q for n, q in value.items() if not str(n).startswith(QUOTA_USAGE_PREFIXES)}
    return _resources(value)


# A Volcano PodGroup's minResources, read as Volcano's scheduler reads it (quota usage left out).
MinResources = Annotated[
    Resources,
    PlainValidator(_min_resources),
    PlainSerializer(Resources.quantities, return_type=dict[str, str]),
]


def _owner_names(value: Any) -> tuple[str, ...]:
    """The names in a list of owner references (all Lahar reads of them), interned: a Job's pods
    share them."""
    if not isinstance(value, list | tuple):
        raise ValueError("ownerReferences must be a list")
    return tuple(
        sys.intern(str(ref.get("name", ""))) if isinstance(ref, Mapping) else str(ref)
        for ref in value
    )


OwnerNames = Annotated[tuple[str, ...], BeforeValidator(_owner_names)]


class ObjectMeta(KubeModel):
    name: str = ""
    namespace: Interned = ""
    uid: str = ""
    resource_version: str = ""
    labels: InternedMap = Field(default_factory=dict)
    annotations: InternedMap = Field(default_factory=dict)
    deletion_timestamp: str | None = None
    # The names of its owners (Coscheduling's PodGroup status names its members' owners).
    owner_names: OwnerNames = Field(default=(), alias="ownerReferences")

    @property
    def key(self) -> str:
        """`namespace/name`, the way users and logs name a namespaced object."""
        return f"{self.namespace}/{self.name}"


class ResourceRequirements(Shared):
    requests: ResourceList = EMPTY


class Container(Shared):
    name: str = ""
    resources: ResourceRequirements = ResourceRequirements()
    restart_policy: str | None = None

    @property
    def is_sidecar(self) -> bool:
        return self.restart_policy == "Always"


class Toleration(Shared):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' rule: an empty key with Exists tolerates every taint."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


class Taint(Shared):
    key: str = ""
    value: str = ""
    effect: str = ""


class PodSpec(KubeModel):
    node_name: Interned = ""
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    affinity: Affinity = Affinity()
    scheduler_name: Interned = "default-scheduler"
    priority: int = 0
    priority_class_name: Interned = ""
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: ResourceList = EMPTY
    resources: ResourceRequirements | None = None
    scheduling_gates: tuple[SchedulingGate, ...] = ()
    # The native PodGroup (`scheduling.k8s.io`, Kubernetes 1.37 beta) the pod belongs to.
    scheduling_group: PodSchedulingGroup | None = None


class SchedulingGate(KubeModel):
    name: str = ""


class PodSchedulingGroup(Shared):
    pod_group_name: Interned = ""


class PodCondition(Shared):
    type: str = ""
    status: str = ""


class PodStatus(KubeModel):
    phase: str = ""
    nominated_node_name: str = ""
    # Only PodScheduled is read (`Pod.parked`); the kubelet's Ready, Initialized, ... are not
    # kept, since the cache holds every pod of the cluster.
    conditions: tuple[PodCondition, ...] = ()

    @field_validator("conditions", mode="before")
    @classmethod
    def _scheduling_only(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [c for c in value if not isinstance(c, dict) or c.get("type") == "PodScheduled"]
        return value


class Pod(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()

    @property
    def key(self) -> str:
        return self.metadata.key

    @property
    def parked(self) -> bool:
        """A scheduler tried it and found no node (PodScheduled is False, and no scheduling gate
        holds it, which kube-scheduler reports the same way): it waits to be retried on a
        cluster event."""
        if self.spec.scheduling_gates:
            return False
        return any(c.type == "PodScheduled" and c.status == "False" for c in self.status.conditions)

    @property
    def finished(self) -> bool:
        """Succeeded or Failed: its resources are free again."""
        return self.status.phase in ("Succeeded", "Failed")

    @cached_property
    def request(self) -> Resources:
        """The effective request the pod occupies on its node (see the module docstring)."""
        spec = self.spec
        total = EMPTY
        for container in spec.containers:
            total += container.resources.requests
        sidecars = EMPTY
        init_peak = EMPTY
        for container in spec.init_containers:
            if container.is_sidecar:
                total += container.resources.requests
                sidecars += container.resources.requests
                init_peak = init_peak.maximum(sidecars)
            else:
                init_peak = init_peak.maximum(container.resources.requests + sidecars)
        total = total.maximum(init_peak)
        if spec.resources is not None:
            total = total.replace(spec.resources.requests)
        return total + spec.overhead + ONE_POD

    @cached_property
    def runs_anywhere(self) -> bool:
        """No nodeSelector and no required node affinity: any node without taints takes it."""
        affinity = self.spec.affinity.node_affinity
        required = (
            affinity.required_during_scheduling_ignored_during_execution
            if affinity is not None
            else None
        )
        return not self.spec.node_selector and required is None

    @cached_property
    def placement_key(self) -> str:
        """What decides which nodes the pod may run on (nodeSelector, required node affinity,
        tolerations), equal for pods that may run on the same nodes: whatever is worked out of
        `may_run_on` for one of them holds for every other (the members of a gang, mostly). A
        string, which keeps its hash: it is looked up once per node a plan looks at."""
        spec = self.spec
        affinity = spec.affinity.node_affinity
        required = (
            affinity.required_during_scheduling_ignored_during_execution
            if affinity is not None
            else None
        )
        if not spec.node_selector and required is None and not spec.tolerations:
            return ""
        return json.dumps(
            [
                sorted(spec.node_selector.items()),
                required.model_dump(mode="json") if required is not None else None,
                [[t.key, t.operator, t.value, t.effect] for t in spec.tolerations],
            ],
            separators=(",", ":"),
        )

    def may_run_on(self, labels: Mapping[str, str], taints: tuple[Taint, ...], name: str) -> bool:
        """The node matches the pod's nodeSelector and required node affinity, and the pod
        tolerates the node's NoSchedule and NoExecute taints (what the in-tree filters check
        before Lahar sees a node; gang plans, made over every node, check it themselves)."""
        selector = self.spec.node_selector
        if any(labels.get(key) != value for key, value in selector.items()):
            return False
        if not self.spec.affinity.allows(labels, name):
            return False
        return all(
            any(t.tolerates(taint) for t in self.spec.tolerations)
            for taint in taints
            if taint.effect in ("NoSchedule", "NoExecute")
        )


class NodeSpec(KubeModel):
    unschedulable: bool = False
    taints: list[Taint] = Field(default_factory=list)


class NodeStatus(KubeModel):
    allocatable: ResourceList = EMPTY


class Node(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class PriorityClass(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    value: int = 0
    global_default: bool = False
