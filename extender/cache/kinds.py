"""The collections Lahar's extender watches, and how each lands in its cluster state.

A `Kind` says of one watched collection where it is (`path`, a label `selector`), which model
its objects are read into, how a list replaces them and a watch event upserts or deletes one in a
store, whether only some clusters serve it (`optional`) and what Kind its objects are named by in
log lines. The informer (`cache.informer`) runs any store's kinds; this module holds the
extender's (`KINDS`: nodes, pods, PriorityClasses, the three kinds of PodGroup, Queues,
HyperNodes, Lahar's ProvisioningRequests and Volcano Jobs). Other components declare their own
(the controller's Jobs and pods, the webhook's Queues and PodGroups). Pure declarations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from extender.api.batch import BATCH_API_VERSION, Job
from extender.api.coscheduling import API_VERSION as COSCHEDULING_API
from extender.api.coscheduling import CoschedulingPodGroup
from extender.api.model import KubeModel
from extender.api.native_groups import API_VERSION as NATIVE_API
from extender.api.native_groups import NativePodGroup
from extender.api.objects import Node, Pod, PriorityClass
from extender.api.provisioning import API_VERSION as PROVISIONING_API
from extender.api.provisioning import GROUP as PROVISIONING_GROUP
from extender.api.provisioning import MANAGED_BY, ProvisioningRequest
from extender.api.provisioning import RESOURCE as PROVISIONING_RESOURCE
from extender.api.scheduling import API_VERSION, GroupKind, PodGroup, Queue
from extender.api.topology import API_VERSION as TOPOLOGY_API
from extender.api.topology import HyperNode
from extender.cache.state import ClusterState

M = TypeVar("M", bound=KubeModel)
S = TypeVar("S")  # the store the events land in: the extender's ClusterState, the controller's own


@dataclass(frozen=True)
class Kind(Generic[S, M]):
    """One watched collection and how its objects land in a store (`selector`: a label
    selector, to watch only the objects one component owns)."""

    name: str
    path: str
    model: type[M]
    replace: Callable[[S, list[M]], None]
    upsert: Callable[[S, M], None]
    delete: Callable[[S, M], None]
    selector: str = ""
    # Served only by some clusters (a CRD not installed, a beta API not enabled): while the API
    # server answers 404, the kind counts as listed and empty, and is looked for again.
    optional: bool = False
    # The Kind of its objects (`Pod`), which log lines name them by: a list's items do not say it
    # (the API server leaves `kind` out of them). "": the object's own `kind`, else `name`.
    object_kind: str = ""

    @property
    def built_in(self) -> bool:
        """Whether kube-apiserver serves the kind itself, not a CRD: the core API (`/api/v1`), or a
        group Kubernetes keeps for its own APIs (`apps`, `scheduling.k8s.io`: no dot, or ending in
        `.k8s.io`; `.x-k8s.io` is the SIG projects' CRDs'). Lahar watches no CRD in such a group."""
        root, _, rest = self.path.strip("/").partition("/")
        if root == "api":
            return True
        group = rest.partition("/")[0]
        return "." not in group or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"))


NODES = Kind(
    "nodes",
    "/api/v1/nodes",
    Node,
    ClusterState.replace_nodes,
    ClusterState.upsert_node,
    lambda state, node: state.delete_node(node.metadata.name),
    object_kind="Node",
)
PODS = Kind(
    "pods",
    "/api/v1/pods",
    Pod,
    ClusterState.replace_pods,
    ClusterState.upsert_pod,
    lambda state, pod: state.delete_pod(pod.metadata.uid),
    object_kind="Pod",
)
PRIORITY_CLASSES = Kind(
    "priorityclasses",
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    PriorityClass,
    ClusterState.replace_priority_classes,
    ClusterState.upsert_priority_class,
    lambda state, pc: state.delete_priority_class(pc.metadata.name),
    object_kind="PriorityClass",
)
POD_GROUPS = Kind(
    "podgroups",
    f"/apis/{API_VERSION}/podgroups",
    PodGroup,
    ClusterState.replace_pod_groups,
    ClusterState.upsert_pod_group,
    lambda state, group: state.delete_pod_group(group.key),
    object_kind="PodGroup",
)
QUEUES = Kind(
    "queues",
    f"/apis/{API_VERSION}/queues",
    Queue,
    ClusterState.replace_queues,
    ClusterState.upsert_queue,
    lambda state, queue: state.delete_queue(queue.metadata.name),
    object_kind="Queue",
)

HYPER_NODES = Kind(
    "hypernodes",
    f"/apis/{TOPOLOGY_API}/hypernodes",
    HyperNode,
    ClusterState.replace_hyper_nodes,
    ClusterState.upsert_hyper_node,
    lambda state, hyper_node: state.delete_hyper_node(hyper_node.name),
    optional=True,  # (a cluster without Volcano's topology CRD has no network topology)
    object_kind="HyperNode",
)


class _Groups(Protocol):
    """A kind of PodGroup that is read into the gang model."""

    def as_gang(self) -> PodGroup: ...


def _replace_groups(kind: GroupKind) -> Callable[[ClusterState, list[Any]], None]:
    def replace(state: ClusterState, groups: list[Any]) -> None:
        state.replace_pod_groups([group.as_gang() for group in groups], kind)

    return replace


def _upsert_group(state: ClusterState, group: _Groups) -> None:
    state.upsert_pod_group(group.as_gang())


def _delete_group(state: ClusterState, group: _Groups) -> None:
    state.delete_pod_group(group.as_gang().key)


COSCHEDULING_GROUPS: Kind[ClusterState, CoschedulingPodGroup] = Kind(
    "podgroups.scheduling.x-k8s.io",
    f"/apis/{COSCHEDULING_API}/podgroups",
    CoschedulingPodGroup,
    _replace_groups(GroupKind.COSCHEDULING),
    _upsert_group,
    _delete_group,
    optional=True,
    object_kind="PodGroup",
)
NATIVE_GROUPS: Kind[ClusterState, NativePodGroup] = Kind(
    "podgroups.scheduling.k8s.io",
    f"/apis/{NATIVE_API}/podgroups",
    NativePodGroup,
    _replace_groups(GroupKind.NATIVE),
    _upsert_group,
    _delete_group,
    optional=True,
    object_kind="PodGroup",
)
PROVISIONING_REQUESTS = Kind(
    f"{PROVISIONING_RESOURCE}.{PROVISIONING_GROUP}",
    f"/apis/{PROVISIONING_API}/{PROVISIONING_RESOURCE}",
    ProvisioningRequest,
    ClusterState.replace_provisioning_requests,
    ClusterState.upsert_provisioning_request,
    lambda state, request: state.delete_provisioning_request(request.key),
    selector="=".join(MANAGED_BY),  # (only the ones Lahar made)
    optional=True,  # (Cluster Autoscaler's CRD: only clusters that run it serve the kind)
    object_kind="ProvisioningRequest",
)
# Volcano's Jobs: the pods a Job waiting for its gang's admission will have (`cache.expected`).
JOBS = Kind(
    "jobs",
    f"/apis/{BATCH_API_VERSION}/jobs",
    Job,
    ClusterState.replace_jobs,
    ClusterState.upsert_job,
    lambda state, job: state.delete_job(job.key),
    optional=True,  # (a cluster running Coscheduling's or native gangs alone has no Job CRD)
    object_kind="Job",
)
KINDS: tuple[Kind[ClusterState, Any], ...] = (
    NODES,
    PODS,
    PRIORITY_CLASSES,
    POD_GROUPS,
    COSCHEDULING_GROUPS,
    NATIVE_GROUPS,
    QUEUES,
    HYPER_NODES,
    PROVISIONING_REQUESTS,
    JOBS,
)
