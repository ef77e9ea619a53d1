"""The Kubernetes objects a trace stands for, as Volcano's controller would make them.

Nodes `<group>-<index>` or as the group names them (an autoscaled pool's added nodes
`<pool>-<number>`, made by `node`), with the group's labels (and `kubernetes.io/hostname`, as the
kubelet sets it), taints, cordon and allowed pod count; one Queue per trace queue, its
`spec.parent` the trace's parent (a top-level queue names none, so the core hangs it under `root`
and a trace with no parents is the flat case), its guarantee, deserved share and priority in its
spec and its state in its status, as Volcano has them, annotated with the scale-up mode a run
gives every queue (`lahar.io/scale-up`, when it gives one); per job a PodGroup of its kind, in
its namespace (`sim` unless it names one): Volcano's (`minMember` = the job's minAvailable, each
task's `minTaskMember`, its queue and PriorityClass), Coscheduling's (its queue in the annotation
`scheduling.volcano.sh/queue-name`, its gatherTimeout as scheduleTimeoutSeconds) or a native one
(a gang policy of minCount, its PriorityClass and priority), each read into the gang model by
that kind's own `as_gang`; and its pods, named as the trace names them (`<job>-<task>-<index>`
unless the task lists them), joined to the group the way that kind's pods join one (the group
annotation, the Coscheduling label, `spec.schedulingGroup`), with the task annotation, the job's
priority and the task's nodeSelector, tolerations and affinity. A restarted job's pods get new
uids (a new incarnation), as recreated pods do. What other schedulers' pods take on a node
(`Trace.occupied`) is one pod bound there, of another scheduler, in no group.
The trace's topology is one HyperNode each (`topology.volcano.sh/v1alpha1`, every member by
exactMatch). A job's networkTopology goes in its PodGroup's `spec.networkTopology`, and each
partitioned task is a `subGroupPolicy` as Volcano's controller makes it (the task's pods by their
`volcano.sh/task-spec` label, split by `volcano.sh/partition-id` into groups of partitionSize),
its pods labelled with both. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.api.batch import PARTITION_KEY, TASK_SPEC_KEY
from extender.api.coscheduling import CoschedulingPodGroup
from extender.api.native_groups import NativePodGroup
from extender.api.objects import Node, Pod, PriorityClass
from extender.api.preemptable import PREEMPTABLE
from extender.api.resources import Resources
from extender.api.scale_up import SCALE_UP_ANNOTATION, Mode
from extender.api.scheduling import (
    COSCHEDULING_LABEL,
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    QUEUE_ANNOTATION,
    TASK_ANNOTATION,
    PodGroup,
    Queue,
    default_queue,
)
from extender.api.topology import HyperNode
from extender.simulate.trace import (
    DEFAULT_NAMESPACE,
    Occupied,
    Task,
    Trace,
    TraceJob,
    TraceNetworkTopology,
    TraceTaint,
)

NAMESPACE = DEFAULT_NAMESPACE
SCHEDULER = "lahar"
OTHER_SCHEDULER = "other"  # the scheduler of the pods that stand for `Trace.occupied`
PODS_PER_NODE = 110  # the kubelet's default
HOSTNAME = "kubernetes.io/hostname"


def nodes(trace: Trace) -> list[Node]:
    """The trace's nodes (an autoscaled pool's starting nodes)."""
    return [
        node(
            name,
            group.allocatable,
            labels=group.labels,
            taints=group.taints,
            unschedulable=group.unschedulable,
            pods=group.pods,
        )
        for group in trace.nodes
        for name in group.node_names
    ]


def node(
    name: str,
    allocatable: Resources,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[TraceTaint] = (),
    unschedulable: bool = False,
    pods: int = PODS_PER_NODE,
) -> Node:
    """A node offering `allocatable` and `pods` pods (the kubelet's default unless given), with
    these labels (and its hostname's), taints and cordon."""
    offered = {**allocatable.quantities(), "pods": str(pods)}
    metadata = {"name": name, "uid": f"node-{name}", "labels": {HOSTNAME: name, **(labels or {})}}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [taint.model_dump(exclude_defaults=True) for taint in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return Node.model_validate(
        {"metadata": metadata, "spec": spec, "status": {"allocatable": offered}}
    )


def queues(trace: Trace, scale_up: Mode | None = None) -> list[Queue]:
    """The trace's queues, and the default queue unless the trace lists it; each annotated with
    `scale_up` when given (else they say nothing: the policy's `gang.scaleUp` holds)."""
    annotations = {SCALE_UP_ANNOTATION: scale_up.value} if scale_up is not None else {}
    listed = [
        Queue.model_validate(
            {
                "metadata": {"name": queue.name, "annotations": annotations},
                "spec": {
                    "weight": queue.weight,
                    "capability": queue.capability,
                    "guarantee": {"resource": queue.guarantee},
                    "deserved": queue.deserved,
                    "priority": queue.priority,
                    "reclaimable": queue.reclaimable,
                    "parent": queue.parent_name or "",
                },
                "status": {"state": queue.state},
            }
        )
        for queue in trace.queues
    ]
    if all(queue.name != DEFAULT_QUEUE for queue in trace.queues):
        made = default_queue()
        listed.append(
            made.model_copy(
                update={"metadata": made.metadata.model_copy(update={"annotations": annotations})}
            )
        )
    return listed


def priority_class_name(priority: int) -> str:
    return f"sim-priority-{priority}".replace("--", "-minus-")


def priority_classes(trace: Trace) -> list[PriorityClass]:
    values = sorted({job.priority for job in trace.jobs})
    return [
        PriorityClass.model_validate(
            {"metadata": {"name": priority_class_name(value)}, "value": value}
        )
        for value in values
    ]


def hyper_nodes(trace: Trace) -> list[HyperNode]:
    """The trace's topology as Volcano's HyperNodes (none without one)."""
    made = []
    for hyper in trace.hyper_nodes:
        members = [
            {"type": kind, "selector": {"exactMatch": {"name": name}}}
            for kind, names in (("Node", hyper.nodes), ("HyperNode", hyper.hyper_nodes))
            for name in names
        ]
        spec: dict[str, Any] = {"tier": hyper.tier, "members": members}
        if hyper.tier_name is not None:
            spec["tierName"] = hyper.tier_name
        made.append(HyperNode.model_validate({"metadata": {"name": hyper.name}, "spec": spec}))
    return made


def pod_group(job: TraceJob) -> PodGroup:
    """The job's PodGroup, of its kind, as the gang engine reads that kind."""
    metadata: dict[str, Any] = {
        "name": job.name,
        "namespace": job.namespace,
        "uid": "pg-" + (job.name if job.namespace == NAMESPACE else f"{job.namespace}/{job.name}"),
    }
    annotations = {} if job.preemptable else {PREEMPTABLE: "false"}
    if job.kind == "coscheduling":
        metadata["annotations"] = {**annotations, QUEUE_ANNOTATION: job.queue}
        group = CoschedulingPodGroup.model_validate(
            {"metadata": metadata, "spec": {"minMember": job.minimum}}
        ).as_gang()
        return group.model_copy(update={"gather_timeout": job.gather_timeout})
    if job.kind == "native":
        metadata["annotations"] = {**annotations, QUEUE_ANNOTATION: job.queue}
        native = {
            "schedulingPolicy": {"gang": {"minCount": job.minimum}},
            "priorityClassName": priority_class_name(job.priority),
            "priority": job.priority,
        }
        return NativePodGroup.model_validate({"metadata": metadata, "spec": native}).as_gang()
    spec: dict[str, Any] = {
        "queue": job.queue,
        "minMember": job.minimum,
        "priorityClassName": priority_class_name(job.priority),
    }
    if job.task_minimums:
        spec["minTaskMember"] = dict(job.task_minimums)
    if job.network_topology is not None:
        spec["networkTopology"] = _network_topology(job.network_topology)
    sub_groups = [_sub_group(task) for task in job.tasks if task.partition_policy is not None]
    if sub_groups:
        spec["subGroupPolicy"] = sub_groups
    if annotations:
        metadata["annotations"] = annotations
    return PodGroup.model_validate({"metadata": metadata, "spec": spec})


def _sub_group(task: Task) -> dict[str, Any]:
    """A partitioned task's sub-group, as Volcano's controller makes it."""
    policy = task.partition_policy
    assert policy is not None
    group: dict[str, Any] = {
        "name": task.name,
        "subGroupSize": policy.partition_size,
        "minSubGroups": 0,
        "labelSelector": {"matchLabels": {TASK_SPEC_KEY: task.name}},
        "matchLabelKeys": [PARTITION_KEY],
    }
    if policy.network_topology is not None:
        group["networkTopology"] = _network_topology(policy.network_topology)
    return group


def _network_topology(topology: TraceNetworkTopology) -> dict[str, Any]:
    wire: dict[str, Any] = {"mode": topology.mode}
    if topology.highest_tier_allowed is not None:
        wire["highestTierAllowed"] = topology.highest_tier_allowed
    if topology.highest_tier_name is not None:
        wire["highestTierName"] = topology.highest_tier_name
    return wire


def pods(job: TraceJob, incarnation: int = 0) -> list[Pod]:
    """The job's pods, pending; uids differ per incarnation (a restarted job's new pods)."""
    made = []
    namespace = "" if job.namespace == NAMESPACE else f"{job.namespace}/"
    for task, index, name in job.pods():
        container = {"name": task.name, "resources": {"requests": task.request.quantities()}}
        annotations = {TASK_ANNOTATION: task.name}
        partition = task.partition_of(index)
        labels = (
            {} if partition is None else {TASK_SPEC_KEY: task.name, PARTITION_KEY: str(partition)}
        )
        spec: dict[str, Any] = {
            "schedulerName": SCHEDULER,
            "priority": job.priority,
            "priorityClassName": priority_class_name(job.priority),
            "containers": [container],
            **task.constraints,
        }
        if job.kind == "coscheduling":
            labels[COSCHEDULING_LABEL] = job.name
        elif job.kind == "native":
            spec["schedulingGroup"] = {"podGroupName": job.name}
        else:
            annotations = {GROUP_ANNOTATION: job.name, **annotations}
        made.append(
            Pod.model_validate(
                {
                    "metadata": {
                        "name": name,
                        "namespace": job.namespace,
                        "uid": f"{namespace}{name}.{incarnation}",
                        "annotations": annotations,
                        "labels": labels,
                    },
                    "spec": spec,
                    "status": {"phase": "Pending"},
                }
            )
        )
    return made


def occupied(taken: Occupied) -> Pod:
    """What other schedulers' pods take on a node, as one pod bound there that Lahar does not
    schedule (in no group, so no queue is charged for it and no preemption evicts it); it asks
    for the pods' slots with its own (the `pods` resource a pod counts once)."""
    requests = dict(taken.resources.quantities())
    if taken.pods > 1:
        requests["pods"] = str(taken.pods - 1)  # (and one for the pod itself)
    return Pod.model_validate(
        {
            "metadata": {
                "name": f"occupied-{taken.node}",
                "namespace": "kube-system",
                "uid": f"occupied/{taken.node}",
            },
            "spec": {
                "nodeName": taken.node,
                "schedulerName": OTHER_SCHEDULER,
                "containers": [{"name": "occupied", "resources": {"requests": requests}}],
            },
            "status": {"phase": "Running"},
        }
    )
