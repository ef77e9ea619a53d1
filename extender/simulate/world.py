"""The Kubernetes objects a trace stands for, as Volcano's controller would make them.

Nodes `<group>-<index>`; one Queue per trace queue, its `spec.parent` the trace's parent (a
top-level queue names none, so the core hangs it under `root` and a trace with no parents is the
flat case); per job a PodGroup (`minMember` = the job's
minAvailable, its queue and PriorityClass) and its pods `<job>-<task>-<index>` with the group
annotation, the task annotation and the job's priority, in namespace `sim`. A restarted job's
pods get new uids (a new incarnation), as recreated pods do. Pure.
"""

from __future__ import annotations

from extender.api.objects import Node, Pod, PriorityClass
from extender.api.scheduling import (
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    TASK_ANNOTATION,
    PodGroup,
    Queue,
    default_queue,
)
from extender.simulate.trace import Trace, TraceJob

NAMESPACE = "sim"
SCHEDULER = "lahar"
PODS_PER_NODE = 110  # the kubelet's default


def nodes(trace: Trace) -> list[Node]:
    made = []
    for group in trace.nodes:
        allocatable = {**group.allocatable.quantities(), "pods": str(PODS_PER_NODE)}
        for index in range(group.count):
            name = f"{group.name}-{index}"
            made.append(
                Node.model_validate(
                    {
                        "metadata": {"name": name, "uid": f"node-{name}"},
                        "status": {"allocatable": allocatable},
                    }
                )
            )
    return made


def queues(trace: Trace) -> list[Queue]:
    """The trace's queues, and the default queue unless the trace lists it."""
    listed = [
        Queue.model_validate(
            {
                "metadata": {"name": queue.name},
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
        listed.append(default_queue())
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


def pod_group(job: TraceJob) -> PodGroup:
    return PodGroup.model_validate(
        {
            "metadata": {"name": job.name, "namespace": NAMESPACE, "uid": f"pg-{job.name}"},
            "spec": {
                "queue": job.queue,
                "minMember": job.minimum,
                "priorityClassName": priority_class_name(job.priority),
            },
        }
    )


def pods(job: TraceJob, incarnation: int = 0) -> list[Pod]:
    """The job's pods, pending; uids differ per incarnation (a restarted job's new pods)."""
    made = []
    for task, name in job.pod_names():
        container = {"name": task.name, "resources": {"requests": task.request.quantities()}}
        annotations = {GROUP_ANNOTATION: job.name, TASK_ANNOTATION: task.name}
        made.append(
            Pod.model_validate(
                {
                    "metadata": {
                        "name": name,
                        "namespace": NAMESPACE,
                        "uid": f"{name}.{incarnation}",
                        "annotations": annotations,
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
