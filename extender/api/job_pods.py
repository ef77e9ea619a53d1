"""A Job's pods as built from its spec, and the ones the engine plans before they exist.

`member_pod` is the pod of one task replica: the task's template with the job's names, labels and
annotations added (Volcano's keys, so tools written for Volcano find them), the job's scheduler
and PriorityClass where the template names none, and an owner reference to the job. The Job
controller adds the job's volumes and its plugins' changes, which decide nothing about where a
pod may run.

A Job that `waits_for_admission` has its pods created only once its PodGroup has left Pending, as
Volcano's job controller does: the gang is admitted in the fair order with one status write, and
its pods then reach kube-scheduler together, with no gate to lift one pod at a time. Until then
the engine plans the gang on its `expected_pods`: each replica's `member_pod`, held by Lahar's
gate (they wait for Lahar alone) and given an `expected_uid` of its own, which the pod the
controller creates later takes over by name. A job with a task that depends on another is not
such a job: that task's pods are created only once the tasks it depends on run, so the gang
cannot be planned whole before its first pods exist; its pods are created at once, behind
Lahar's gate. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from extender.api.batch import (
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    JOB_VERSION_KEY,
    PARTITION_KEY,
    QUEUE_NAME_KEY,
    RETRY_COUNT_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
    Job,
    Phase,
    TaskSpec,
    pod_name,
)
from extender.api.objects import Pod
from extender.api.scheduling import GANG_GATE, GROUP_ANNOTATION

DEFAULT_SCHEDULER = "default-scheduler"  # what a pod naming no scheduler gets
EXPECTED = "expected:"  # how the uid of a pod the controller has not created yet begins


def member_pod(job: Job, task: TaskSpec, index: int) -> dict[str, Any]:
    """The pod of replica `index` of `task`, before the job's volumes and plugins."""
    template = copy.deepcopy(task.template)
    meta = template.get("metadata") or {}
    spec: dict[str, Any] = template.get("spec") or {}
    name, namespace = job.metadata.name, job.metadata.namespace
    labels = {
        **(meta.get("labels") or {}),
        JOB_NAME_KEY: name,
        TASK_SPEC_KEY: task.name,
        TASK_INDEX_KEY: str(index),
        JOB_NAMESPACE_KEY: namespace,
        QUEUE_NAME_KEY: job.spec.queue,
    }
    partition = task.partition_of(index)
    if partition is not None:
        labels[PARTITION_KEY] = str(partition)
    annotations = {
        **(meta.get("annotations") or {}),
        GROUP_ANNOTATION: job.pod_group_name,
        JOB_NAME_KEY: name,
        TASK_SPEC_KEY: task.name,
        TASK_INDEX_KEY: str(index),
        QUEUE_NAME_KEY: job.spec.queue,
        JOB_VERSION_KEY: str(job.status.version),
        TEMPLATE_UID_KEY: f"{name}-{task.name}",
        RETRY_COUNT_KEY: str(job.status.retry_count),
    }
    if job.spec.scheduler_name and not spec.get("schedulerName"):
        spec["schedulerName"] = job.spec.scheduler_name
    if job.spec.priority_class_name and not spec.get("priorityClassName"):
        spec["priorityClassName"] = job.spec.priority_class_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(name, task.name, index),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [job.owner_reference()],
        },
        "spec": spec,
    }


def scheduler_of(job: Job, task: TaskSpec) -> str:
    """The scheduler of the task's pods: its template's, else the job's, else the default."""
    spec = task.template.get("spec") or {}
    return str(spec.get("schedulerName") or job.spec.scheduler_name or DEFAULT_SCHEDULER)


def waits_for_admission(job: Job) -> bool:
    """Whether the job's pods are created only once its PodGroup has left Pending: unless a
    task depends on another (its pods come once that one runs)."""
    return not any(task.depends_on is not None for task in job.spec.tasks)


def expecting(job: Job) -> bool:
    """Whether the engine plans the job's gang on pods not created yet: it waits for admission,
    it is Pending (its pods are made, or made again after a restart, only then) and not being
    deleted."""
    return (
        waits_for_admission(job)
        and job.phase == Phase.PENDING
        and job.metadata.deletion_timestamp is None
    )


def expected_uid(name: str) -> str:
    """The uid an expected pod of that name carries until the real one is created."""
    return f"{EXPECTED}{name}"


def is_expected(uid: str) -> bool:
    return uid.startswith(EXPECTED)


def expected_name(uid: str) -> str:
    """The name of the pod an expected uid stands for."""
    return uid.removeprefix(EXPECTED)


def expected_pods(job: Job, priority_of: Callable[[str], int]) -> dict[str, Pod]:
    """Every replica's pod as the engine plans it before the controller creates it, by name:
    behind Lahar's gate, with its `expected_uid`, and the priority the API server will give it
    (`priority_of` its PriorityClass name, "" for none)."""
    pods: dict[str, Pod] = {}
    for task in job.spec.tasks:
        for index in range(task.replicas):
            body = member_pod(job, task, index)
            name = body["metadata"]["name"]
            body["metadata"]["uid"] = expected_uid(name)
            spec = body["spec"]
            spec["schedulingGates"] = [{"name": GANG_GATE}]
            spec["priority"] = priority_of(spec.get("priorityClassName") or "")
            pods[name] = Pod.model_validate(body)
    return pods
