"""The Job a user asks `lahar whatif -f` about: taken as the admission webhook would take it, and
played as the Job controller would make it.

A Volcano Job (`batch.volcano.sh/v1alpha1`) goes through the webhook's own rules first
(`admission.admit`: the mutating rules, Volcano's defaults applied, then the validating rules),
against the queues and PodGroups of the snapshot, so a Job the cluster would refuse is refused
here with the very message `kubectl apply` would print; one the webhook lets through but no
Lahar decision is made for (another scheduler's, one with no pod, one in a namespace that cannot
exist) is refused saying so. Then it becomes a trace job: its PodGroup's minimums and network
topology as `api.job_groups.build_pod_group` makes them, each task's pod as
`api.job_pods.member_pod` makes it (requests, node selector, tolerations, node affinity), its
priority the highest of its pods' PriorityClasses in the snapshot (as a running gang's; a pod
naming none has the snapshot's globalDefault one, as the API server gives it) and its
run time from the sources a running gang's comes from (`simulate.run_times`), or the one the
user gives. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from extender.admission.admit import Settings, mutate_job, validate_job
from extender.admission.job_defaults import defaulted_spec
from extender.admission.names import dns_label
from extender.api.admission import AdmissionRequest, GroupVersionKind, GroupVersionResource
from extender.api.batch import BATCH_API_VERSION, Job
from extender.api.duration import duration_or_none
from extender.api.job_groups import build_pod_group
from extender.api.job_pods import member_pod
from extender.api.objects import ObjectMeta, Pod
from extender.api.preemptable import preemptable
from extender.api.run_times import RUN_TIME_ANNOTATION, RunHistory
from extender.api.scheduling import DEFAULT_QUEUE, ROOT, Queue
from extender.simulate import world
from extender.simulate.cluster_gangs import (
    FOREVER,
    GPU,
    SHORTEST,
    network_topology,
    quantity,
    trace_run_time,
)
from extender.simulate.run_times import Estimate, RunFacts, estimate
from extender.simulate.trace import (
    PartitionPolicy,
    Task,
    Trace,
    TraceJob,
)

UID = "whatif"  # the uid the Job is played with (its PodGroup is named JOB-UID, as Volcano's)


@dataclass(frozen=True)
class Refused:
    """Why the Job cannot be asked about: the webhook's denial, or not a Job at all."""

    message: str


@dataclass(frozen=True)
class Asked:
    job: TraceJob
    estimate: Estimate
    warnings: tuple[str, ...]


def read_job(
    text: str,
    trace: Trace,
    *,
    namespace: str,
    history: RunHistory,
    run_time: tuple[float, float] | None = None,
    default: tuple[float, float] | None = None,
    settings: Settings | None = None,
) -> Asked | Refused:
    """The one Volcano Job in `text` (YAML) as the snapshot `trace` would play it, in
    `namespace` when it names none; refused as the webhook refuses it."""
    body = _one_job(text, namespace)
    if isinstance(body, Refused):
        return body
    meta = body["metadata"]
    chosen = settings or Settings()
    view = SnapshotQueues(trace)
    mutated = mutate_job(_request(body), view, chosen)
    if mutated.message:
        return Refused(mutated.message)
    body = {**body, "spec": defaulted_spec(body, chosen.scheduler_name)}
    validated = validate_job(_request(body), view, chosen)
    if validated.message:
        return Refused(validated.message)
    job = Job.model_validate({**body, "metadata": {**meta, "uid": UID}})
    unplayable = _unplayable(job, chosen)
    if unplayable is not None:
        return Refused(unplayable)
    estimated = _run_time(job, history, run_time, default)
    return Asked(_trace_job(job, trace, estimated), estimated, validated.warnings)


class SnapshotQueues:
    """The snapshot's queues and PodGroups, as the webhook's cache shows them to its rules."""

    def __init__(self, trace: Trace) -> None:
        self._queues = {queue.metadata.name: queue for queue in world.queues(trace)}
        self._groups: dict[str, list[str]] = {}
        for job in trace.jobs:
            self._groups.setdefault(job.queue, []).append(f"{job.namespace}/{job.name}")

    def queue(self, name: str) -> Queue | None:
        return self._queues.get(name)

    def pod_groups_in(self, queue: str) -> Sequence[str]:
        return self._groups.get(queue, ())

    def children(self, name: str) -> Sequence[Queue]:
        return sorted(
            (
                queue
                for queue in self._queues.values()
                if queue.metadata.name != name
                and (queue.spec.parent or ROOT) == name
                and queue.metadata.name != ROOT
            ),
            key=lambda queue: queue.metadata.name,
        )


def _one_job(text: str, namespace: str) -> dict[str, Any] | Refused:
    """The one Job the YAML `text` holds, in `namespace` unless it names one."""
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        return Refused(f"not YAML: {error}")
    jobs = [doc for doc in documents if _is_job(doc)]
    others = [doc for doc in documents if not _is_job(doc)]
    if len(jobs) != 1 or others:
        kinds = ", ".join(_kind_of(doc) for doc in documents) or "nothing"
        return Refused(
            f"whatif takes one Volcano Job ({BATCH_API_VERSION}, kind Job); the file holds {kinds}"
        )
    body: dict[str, Any] = dict(jobs[0])
    meta = dict(body.get("metadata") or {})
    meta.setdefault("namespace", namespace)
    body["metadata"] = meta
    return body


def _unplayable(job: Job, settings: Settings) -> str | None:
    """Why a Job the webhook lets through is no job to play: another scheduler's (the webhook
    leaves those unread), one without pods, or one in a namespace that cannot exist."""
    key = job.metadata.key
    if job.spec.scheduler_name not in settings.served:
        served = ", ".join(sorted(settings.served))
        return (
            f"Job {key} is for scheduler {job.spec.scheduler_name}, not one Lahar serves "
            f"({served}): there is no Lahar decision to show"
        )
    if not any(task.replicas > 0 for task in job.spec.tasks):
        return f"Job {key} has no pod to play: each of its tasks has 0 replicas"
    named = dns_label(job.metadata.namespace)
    if named is not None:
        return f"Job {key}: namespace {job.metadata.namespace!r} {named}"
    return None


def _is_job(document: object) -> bool:
    return (
        isinstance(document, dict)
        and document.get("apiVersion") == BATCH_API_VERSION
        and document.get("kind") == "Job"
    )


def _kind_of(document: object) -> str:
    if not isinstance(document, dict):
        return "a list" if isinstance(document, list) else f"a value ({document!r:.40})"
    return f"{document.get('kind') or 'an object with no kind'} ({document.get('apiVersion')})"


def _request(body: dict[str, Any]) -> AdmissionRequest:
    group, _, version = BATCH_API_VERSION.partition("/")
    meta = body.get("metadata") or {}
    return AdmissionRequest(
        uid=UID,
        kind=GroupVersionKind(group=group, version=version, kind="Job"),
        resource=GroupVersionResource(group=group, version=version, resource="jobs"),
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        operation="CREATE",
        object=body,
        dry_run=True,
    )


def _run_time(
    job: Job,
    history: RunHistory,
    given: tuple[float, float] | None,
    default: tuple[float, float] | None,
) -> Estimate:
    """What the user gives; else what the sources of a running gang's say for it."""
    if given is not None:
        low, high = given
        return Estimate(low, low + (high - low) / 2, high, "given")
    facts = RunFacts(
        owner=job.metadata.key,
        queue=job.spec.queue or DEFAULT_QUEUE,
        elapsed=0.0,
        annotation=job.metadata.annotations.get(RUN_TIME_ANNOTATION),
        # (an unreadable one: the webhook's rules said so already)
        running_estimate=duration_or_none(job.spec.running_estimate),
    )
    return estimate(facts, history, default)


def _trace_job(job: Job, trace: Trace, estimated: Estimate) -> TraceJob:
    group = build_pod_group(job)["spec"]
    duration = estimated.expected if math.isfinite(estimated.expected) else FOREVER
    tasks = []
    classes: list[str] = []  # the PriorityClasses its pods name (a task's own, else the job's)
    for task in job.spec.tasks:
        if task.replicas == 0:
            continue
        spec = member_pod(job, task, 0).get("spec") or {}
        named = spec.get("priorityClassName") or trace.default_priority_class
        if named:  # (a pod naming none gets the globalDefault one, as the API server gives it)
            classes.append(str(named))
        pod = Pod.model_validate({"spec": spec})
        request = pod.request
        affinity = (spec.get("affinity") or {}).get("nodeAffinity")
        policy = task.partition_policy
        tasks.append(
            Task(
                name=task.name,
                replicas=task.replicas,
                cpu=quantity(request, "cpu"),
                memory=quantity(request, "memory"),
                gpu=quantity(request, GPU) if request[GPU] else None,
                duration=max(duration, SHORTEST),
                min_available=group["minTaskMember"].get(task.name),
                node_selector=dict(spec.get("nodeSelector") or {}),
                tolerations=tuple(spec.get("tolerations") or ()),
                affinity={"nodeAffinity": affinity} if affinity else None,
                partition_policy=(
                    PartitionPolicy(
                        total_partitions=policy.total_partitions,
                        partition_size=policy.partition_size,
                        network_topology=network_topology(policy.network_topology),
                    )
                    if policy is not None
                    else None
                ),
            )
        )
    meta = job.metadata
    return TraceJob(
        name=meta.name,
        namespace=meta.namespace,
        queue=job.spec.queue or DEFAULT_QUEUE,
        # (the gang's priority is its pods' highest, as a running gang's in `from_cluster`)
        priority=max((trace.priority_classes.get(name, 0) for name in classes), default=0),
        priority_class=job.spec.priority_class_name or next(iter(classes), None),
        # (its PodGroup carries the Job's labels and annotations: either may say it)
        preemptable=preemptable(ObjectMeta(labels=meta.labels, annotations=meta.annotations)),
        min_available=job.spec.min_available or None,
        network_topology=network_topology(job.spec.network_topology),
        tasks=tuple(tasks),
        run_time=trace_run_time(estimated),
    )
