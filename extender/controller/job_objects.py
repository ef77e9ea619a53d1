"""The objects a Job owns, built from its spec: its PodGroup and the pod of each task replica.

The PodGroup is `api.job_groups.build_pod_group`'s (what Volcano's controller copies into it),
kept in `api` because the simulator builds the same group for a Job not yet submitted.

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

from extender.api.batch import JOB_NAME_KEY, Job, TaskSpec
from extender.api.job_pods import member_pod
from extender.api.scheduling import GANG_GATE
from extender.jobplugins import JobPlugin
from extender.jobplugins._pods import mount


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
