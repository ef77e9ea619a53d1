"""The Kubernetes objects a trace stands for, as Volcano's controller would make them.

Nodes `<group>-<index>` (an autoscaled pool's added nodes `<pool>-<number>`, made by `node`);
one Queue per trace queue, its `spec.parent` the trace's parent (a top-level queue names none, so
the core hangs it under `root` and a trace with no parents is the flat case), annotated with the
scale-up mode a run gives every queue (`lahar.io/scale-up`, when it gives one); per job a
PodGroup (`minMember` = the job's minAvailable, its queue and PriorityClass) and its pods
`<job>-<task>-<index>` with the group annotation, the task annotation and the job's priority, in
namespace `sim`. A restarted job's pods get new uids (a new incarnation), as recreated pods do.
The trace's topology is one HyperNode each (`topology.volcano.sh/v1alpha1`, every member by
exactMatch). A job's networkTopology goes in its PodGroup's `spec.networkTopology`, and each
partitioned task is a `subGroupPolicy` as Volcano's controller makes it (the task's pods by their
`volcano.sh/task-spec` label, split by `volcano.sh/partition-id` into groups of partitionSize),
its pods labelled with both. Pure.
"""

from __future__ import annotations

from typing import Any

from extender.api.batch import PARTITION_KEY, TASK_SPEC_KEY
from extender.api.objects import Node, Pod, PriorityClass
from extender.api.preemptable import PREEMPTABLE
from extender.api.resources import Resources
from extender.api.scale_up import SCALE_UP_ANNOTATION, Mode
from extender.api.scheduling import (
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    TASK_ANNOTATION,
    PodGroup,
    Queue,
    default_queue,
)
from extender.api.topology import HyperNode
from extender.simulate.trace import Task, Trace, TraceJob, TraceNetworkTopology

NAMESPACE = "sim"
SCHEDULER = "lahar"
PODS_PER_NODE = 110  # the kubelet's default


def nodes(trace: Trace) -> list[Node]:
    """The trace's nodes (an autoscaled pool's starting nodes)."""
    return [
        node(f"{group.name}-{index}", group.allocatable)
        for group in trace.nodes
        for index in range(group.count)
    ]


def node(name: str, allocatable: Resources) -> Node:
    """A node offering `allocatable` and the kubelet's default pod count."""
    offered = {**allocatable.quantities(), "pods": str(PODS_PER_NODE)}
    return Node.model_validate(
        {"metadata": {"name": name, "uid": f"node-{name}"}, "status": {"allocatable": offered}}
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
                    "reclaimable": queue.reclaimable,
                    "parent": queue.parent_name or "",
                },
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
    spec: dict[str, Any] = {
        "queue": job.queue,
        "minMember": job.minimum,
        "priorityClassName": priority_class_name(job.priority),
    }
    if job.network_topology is not None:
        spec["networkTopology"] = _network_topology(job.network_topology)
    sub_groups = [_sub_group(task) for task in job.tasks if task.partition_policy is not None]
    if sub_groups:
        spec["subGroupPolicy"] = sub_groups
    metadata: dict[str, Any] = {"name": job.name, "namespace": NAMESPACE, "uid": f"pg-{job.name}"}
    if not job.preemptable:
        metadata["annotations"] = {PREEMPTABLE: "false"}
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
    for task, index, name in job.pods():
        container = {"name": task.name, "resources": {"requests": task.request.quantities()}}
        annotations = {GROUP_ANNOTATION: job.name, TASK_ANNOTATION: task.name}
        partition = task.partition_of(index)
        labels = (
            {} if partition is None else {TASK_SPEC_KEY: task.name, PARTITION_KEY: str(partition)}
        )
        made.append(
            Pod.model_validate(
                {
                    "metadata": {
                        "name": name,
                        "namespace": NAMESPACE,
                        "uid": f"{name}.{incarnation}",
                        "annotations": annotations,
                        "labels": labels,
                    },
                    "spec": {
                        "schedulerName": SCHEDULER,
                        "priority": job.priority,
                        "priorityClassName": priority_class_name(job.priority),
                        "containers": [container],
                    },
                    "status": {"phase": "Pending"},
                }
            )
        )
    return made
