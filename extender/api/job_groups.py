"""The PodGroup a Volcano Job's controller makes for it, built from the Job's spec alone.

It carries what Volcano's controller copies into it: minMember, per-task minimums
(minAvailable, else minPartitions whole partitions, else every replica), queue, priority,
minResources (the requests of the first minMember pods in task order), the job's
networkTopology (one tier: highestTierAllowed over highestTierName) and, per task with a
partition policy, a `subGroupPolicy` (the task's pods by label, split by their partition label
`volcano.sh/partition-id` into groups of partitionSize).

Pure, and in `api` because two callers build the same group from a Job: the Job controller,
which creates it, and the simulator, which plays a Job a user has not submitted yet.
"""

from __future__ import annotations

from typing import Any

from extender.api.batch import PARTITION_KEY, TASK_SPEC_KEY, Job, TaskSpec
from extender.api.objects import Pod
from extender.api.resources import EMPTY, PODS, Resources
from extender.api.scheduling import API_VERSION, NetworkTopology

NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})


def pod_request(task: TaskSpec) -> Resources:
    """What one pod of the task asks for (Kubernetes' effective request, without the pod slot)."""
    request = Pod.model_validate({"spec": task.template.get("spec") or {}}).request
    return Resources({k: v for k, v in request.items() if k != PODS})


def min_resources(job: Job) -> Resources:
    """The requests of the first `minAvailable` pods, in task order: what the gang needs."""
    total, left = EMPTY, job.spec.min_available
    for task in job.spec.tasks:
        take = min(left, task.replicas)
        if take <= 0:
            continue  # a task scaled to zero, or the gang is counted whole
        request = pod_request(task)
        for _ in range(take):
            total += request
        left -= take
    return total


def build_pod_group(job: Job) -> dict[str, Any]:
    meta = job.metadata
    spec: dict[str, Any] = {
        "minMember": job.spec.min_available,
        "minTaskMember": {t.name: t.min_members for t in job.spec.tasks},
        "queue": job.spec.queue,
        "minResources": min_resources(job).quantities(),
    }
    if job.spec.priority_class_name:
        spec["priorityClassName"] = job.spec.priority_class_name
    if job.spec.network_topology is not None:
        spec["networkTopology"] = _network_topology(job.spec.network_topology, one_tier=True)
    sub_groups = [_sub_group(task) for task in job.spec.tasks if task.partition_policy is not None]
    if sub_groups:
        spec["subGroupPolicy"] = sub_groups
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": job.pod_group_name,
            "namespace": meta.namespace,
            "labels": dict(meta.labels),
            "annotations": {k: v for k, v in meta.annotations.items() if k not in NOT_COPIED},
            "ownerReferences": [job.owner_reference()],
        },
        "spec": spec,
    }


def _sub_group(task: TaskSpec) -> dict[str, Any]:
    """Volcano's sub-group of a partitioned task: its pods (by task label) split by partition
    label into groups of partitionSize, minPartitions of them needed."""
    policy = task.partition_policy
    assert policy is not None
    group: dict[str, Any] = {
        "name": task.name,
        "subGroupSize": policy.partition_size,
        "minSubGroups": policy.min_partitions,
        "labelSelector": {"matchLabels": {TASK_SPEC_KEY: task.name}},
        "matchLabelKeys": [PARTITION_KEY],
    }
    if policy.network_topology is not None:
        group["networkTopology"] = _network_topology(policy.network_topology, one_tier=False)
    return group


def _network_topology(topology: NetworkTopology, *, one_tier: bool) -> dict[str, Any]:
    """As Volcano's controller copies it: the job's keeps highestTierAllowed over
    highestTierName (`one_tier`), a partition's keeps both."""
    wire: dict[str, Any] = {"mode": topology.mode}
    if topology.highest_tier_allowed is not None:
        wire["highestTierAllowed"] = topology.highest_tier_allowed
    if topology.highest_tier_name and not (one_tier and "highestTierAllowed" in wire):
        wire["highestTierName"] = topology.highest_tier_name
    return wire
