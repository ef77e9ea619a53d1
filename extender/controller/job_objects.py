"""The objects a Job owns, built from its spec: its PodGroup and the pod of each task replica.

The PodGroup carries what Volcano's controller copies into it: minMember, per-task minimums
(minAvailable, else minPartitions whole partitions, else every replica), queue, priority,
minResources, the job's networkTopology (one tier: highestTierAllowed over highestTierName) and,
per task with a partition policy, a `subGroupPolicy` (the task's pods by label, split by their
partition label `volcano.sh/partition-id` into groups of partitionSize).

Pure. A pod is the task's template as `api.job_pods.member_pod` builds it (the job's names,
labels and annotations, its scheduler and PriorityClass, an owner reference to the job, so garbage
collection removes the pods with it), the job's volumes mounted and then each plugin's changes.
Template fields Lahar does not know pass through untouched; the API server validates them. The
pods of a job that waits for its PodGroup's admission (`api.job_pods.waits_for_admission`) are
created only once it is admitted, ungated; a job of one of the schedulers Lahar serves whose tasks
depend on each other has its pods created behind Lahar's scheduling gate (`GANG_GATE`), which
Lahar lifts when it admits the gang.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from extender.api.batch import JOB_NAME_KEY, PARTITION_KEY, TASK_SPEC_KEY, Job, TaskSpec
from extender.api.job_pods import member_pod
from extender.api.objects import Pod
from extender.api.resources import EMPTY, PODS, Resources
from extender.api.scheduling import API_VERSION, GANG_GATE, NetworkTopology
from extender.jobplugins import JobPlugin
from extender.jobplugins._pods import mount

NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})


def volume_claim_name(job: Job, index: int) -> str:
    """The claim a job volume mounts: the one it names, else the one the controller makes."""
    volume = job.spec.volumes[index]
    return volume.volume_claim_name or f"{job.metadata.name}-volume-{index}"


def build_pod(
    job: Job,
    task: TaskSpec,
    index: int,
    plugins: Sequence[JobPlugin],
    *,
    gated: bool = False,
) -> dict[str, Any]:
    """The pod of replica `index` of `task` (`api.job_pods.member_pod`), with the job's volumes
    and each plugin's changes; behind Lahar's gate when `gated`."""
    pod = member_pod(job, task, index)
    spec = pod["spec"]
    for number, volume in enumerate(job.spec.volumes):
        claim = volume_claim_name(job, number)
        mount(
            pod,
            {"name": claim, "persistentVolumeClaim": {"claimName": claim}},
            {"name": claim, "mountPath": volume.mount_path},
        )
    for plugin in plugins:
        plugin.mutate_pod(pod, job, task, index)
    if gated:
        gates = spec.setdefault("schedulingGates", [])
        if not any(gate.get("name") == GANG_GATE for gate in gates):
            gates.append({"name": GANG_GATE})
    return pod


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


def volume_claims(job: Job) -> list[dict[str, Any]]:
    """The claims the controller makes for job volumes that describe one (`volumeClaim`)."""
    claims = []
    for number, volume in enumerate(job.spec.volumes):
        if volume.volume_claim_name or volume.volume_claim is None:
            continue
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": volume_claim_name(job, number),
                    "namespace": job.metadata.namespace,
                    "labels": {JOB_NAME_KEY: job.metadata.name},
                    "ownerReferences": [job.owner_reference()],
                },
                "spec": copy.deepcopy(volume.volume_claim),
            }
        )
    return claims
