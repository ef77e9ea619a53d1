"""Volcano fields Lahar keeps but does not act on yet, found in an object, so that each is said
instead of being ignored in silence: the webhook answers them as admission warnings (kubectl
prints them; the object is admitted), and the Job controller records each once as a Warning Event
on the Job (`FieldNotHonoured`), for jobs created without the webhook or by a client that drops
warnings.

- Job: a task's `topologyPolicy` other than none (no NUMA alignment).
- Queue: `affinity` (Volcano's node groups), `extendClusters` (multi-cluster dispatch) and
  dequeueStrategy `fifo` (Lahar lets a gang that fits pass one that does not). `parent` is
  honoured (the scheduler shares a parent's resources among its children; the webhook checks the
  tree), so it is not said.

Network topology is honoured, so it is not said either: a Job's or PodGroup's `networkTopology`
(hard or soft, within one HyperNode of the tier allowed) and a task's `partitionPolicy`, each
partition placed within one HyperNode through the PodGroup's `subGroupPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from extender.admission.problems import field, parse
from extender.api.batch import Job
from extender.api.scheduling import Queue

REASON = "FieldNotHonoured"  # the controller's Event
NUMA = "Lahar does not align pods to NUMA nodes (Volcano's numa-aware plugin)"
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Unhonoured:
    path: str
    why: str

    def __str__(self) -> str:
        return f"{self.path} is not honoured yet: {self.why}"


def job_fields(job: Job) -> list[Unhonoured]:
    return [
        Unhonoured(field("spec", "tasks", index, "topologyPolicy"), NUMA)
        for index, task in enumerate(job.spec.tasks)
        if task.topology_policy not in (None, "none")
    ]


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


def queue_warnings(obj: Mapping[str, Any] | None) -> list[str]:
    """The webhook's warnings for a Queue it admits."""
    return _warnings(Queue, obj, queue_fields)


def _warnings(
    model: type[M], obj: Mapping[str, Any] | None, found: Callable[[M], list[Unhonoured]]
) -> list[str]:
    parsed, _ = parse(model, obj, model.__name__)
    return [] if parsed is None else [str(item) for item in found(parsed)]  # None: refused
