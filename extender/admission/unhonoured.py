"""Volcano fields Lahar keeps but does not act on yet, found in an object, so that each is said
instead of being ignored in silence: the webhook answers them as admission warnings (kubectl
prints them; the object is admitted), and the Job controller records each once as a Warning Event
on the Job (`FieldNotHonoured`), for jobs created without the webhook or by a client that drops
warnings.

- Job: `networkTopology` (the job's) and each task's `partitionPolicy` (the controller labels the
  pods by partition and gives the PodGroup Volcano's `subGroupPolicy` and `networkTopology`, but
  Lahar's scheduler places the whole gang without regard to partitions or network tiers) and
  `topologyPolicy` other than none (no NUMA alignment).
- PodGroup: `networkTopology` and `subGroupPolicy`, for the same reason. Said at admission only:
  a PodGroup's spec is its creator's, who sees the warning when creating it, and the extender
  reads every PodGroup of the cluster on its hot path, where an Event per group would be a write
  per group for a property that never changes.
- Queue: `affinity` (Volcano's node groups), `extendClusters` (multi-cluster dispatch) and
  dequeueStrategy `fifo` (Lahar lets a gang that fits pass one that does not). `parent` is
  honoured (the scheduler shares a parent's resources among its children; the webhook checks the
  tree), so it is not said.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from extender.admission.problems import field, parse
from extender.api.batch import Job
from extender.api.scheduling import PodGroup, Queue

REASON = "FieldNotHonoured"  # the controller's Event
NETWORK = (
    "Lahar's scheduler places the pods without regard to network topology (HyperNode tiers); "
    "the field is kept, and copied to the PodGroup, for a scheduler that does"
)
PARTITIONS = (
    "the pods are labelled by partition (volcano.sh/partition-id) and the PodGroup gets a "
    "subGroupPolicy, but Lahar's scheduler places the task within the job's gang, not partition "
    "by partition nor within a network topology"
)
SUB_GROUPS = (
    "Lahar's scheduler places the group's pods as one gang, not sub-group by sub-group nor "
    "within a network topology"
)
NUMA = "Lahar does not align pods to NUMA nodes (Volcano's numa-aware plugin)"
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Unhonoured:
    path: str
    why: str

    def __str__(self) -> str:
        return f"{self.path} is not honoured yet: {self.why}"


def job_fields(job: Job) -> list[Unhonoured]:
    found = []
    if job.spec.network_topology is not None:
        found.append(Unhonoured("spec.networkTopology", NETWORK))
    for index, task in enumerate(job.spec.tasks):
        at = ("spec", "tasks", index)
        if task.partition_policy is not None:
            found.append(Unhonoured(field(*at, "partitionPolicy"), PARTITIONS))
        if task.topology_policy not in (None, "none"):
            found.append(Unhonoured(field(*at, "topologyPolicy"), NUMA))
    return found


def pod_group_fields(group: PodGroup) -> list[Unhonoured]:
    found = []
    if group.spec.network_topology is not None:
        found.append(Unhonoured("spec.networkTopology", NETWORK))
    if group.spec.sub_group_policy:
        found.append(Unhonoured("spec.subGroupPolicy", SUB_GROUPS))
    return found


def queue_fields(queue: Queue) -> list[Unhonoured]:
    spec, found = queue.spec, []
    if spec.affinity is not None:
        found.append(Unhonoured("spec.affinity", "Lahar does not place pods by node group"))
    if spec.extend_clusters:
        found.append(Unhonoured("spec.extendClusters", "Lahar schedules in its own cluster only"))
    if spec.dequeue_strategy == "fifo":
        found.append(
            Unhonoured(
                "spec.dequeueStrategy",
                "Lahar lets a gang that fits pass one that does not (traverse)",
            )
        )
    return found


def pod_group_warnings(obj: Mapping[str, Any] | None) -> list[str]:
    """The webhook's warnings for a PodGroup it admits."""
    return _warnings(PodGroup, obj, pod_group_fields)


def queue_warnings(obj: Mapping[str, Any] | None) -> list[str]:
    """The webhook's warnings for a Queue it admits."""
    return _warnings(Queue, obj, queue_fields)


def _warnings(
    model: type[M], obj: Mapping[str, Any] | None, found: Callable[[M], list[Unhonoured]]
) -> list[str]:
    parsed, _ = parse(model, obj, model.__name__)
    return [] if parsed is None else [str(item) for item in found(parsed)]  # None: refused
