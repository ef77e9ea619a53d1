"""The gangs of a live cluster's snapshot as trace jobs, each with its run time: what
`from_cluster` lists one by one.

A `GangReader` is made once per snapshot from the raw lists (`kube.snapshot_lists.RawCluster`),
because the extender's models leave out fields a replay needs: pods' start times and
`activeDeadlineSeconds`, creation times, the owning Volcano and batch Jobs. It then reads each
gang, a PodGroup with its pods (`gang`), or a pending pod of a served scheduler that names no gang
(`single`: a gang of one), into a `TraceJob` and its `simulate.run_times.Estimate`:

- a gang with fewer pods than its minimum is left out (its other pods are not made yet), saying
  so; the fields the trace cannot play (`subGroupPolicy`) are listed in `Gang.dropped`;
- a gang is `started` once its minimum of pods is bound: at the earliest `status.startTime` of its
  bound pods, in seconds from the snapshot (<= 0; a bound pod not started yet: now);
- its deadline, in seconds from its start (a gang not started has none), is the earliest end set
  by its bound pods' `activeDeadlineSeconds` (each from that pod's start) or by their batch Jobs'
  (from the Job's start);
- its run time is `run_times.estimate` over the annotation on its Job, PodGroup or first pod,
  the Job's `runningEstimate`, the history, the user's default and that deadline; the expected
  total is every task's duration (held within [SHORTEST, FOREVER]) and the range its `runTime`;
- its pods are tasks by task name, request and node constraints (selector, tolerations and node
  affinity as listed, or as the cache expects them for a pod its Job's controller has not made),
  in natural name order; each bound pod names its node.

`quantity` writes an amount as the trace holds it, for the nodes and the jobs alike. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.api.batch import Job
from extender.api.duration import duration_or_none
from extender.api.objects import Pod
from extender.api.preemptable import preemptable
from extender.api.quantity import units_quantity
from extender.api.resources import Resources
from extender.api.run_times import RUN_TIME_ANNOTATION, RunHistory
from extender.api.scheduling import (
    DEFAULT_QUEUE,
    GroupKind,
    NetworkTopology,
    PodGroup,
    task_of,
)
from extender.api.times import parse_time
from extender.kube.snapshot_lists import RawCluster
from extender.simulate.natural_order import natural_key
from extender.simulate.run_times import Estimate, RunFacts, estimate
from extender.simulate.trace import (
    RunTime,
    Task,
    TraceJob,
    TraceNetworkTopology,
    TracePod,
)

GPU = "nvidia.com/gpu"
# The run time of a gang no source gives one for: it holds what it holds past any horizon.
FOREVER = 10 * 365 * 86400.0
# The shortest run time played: a task runs for some time (a run time of 0 plays as this).
SHORTEST = 1e-3
KIND_NAMES = {
    GroupKind.VOLCANO: "volcano",
    GroupKind.COSCHEDULING: "coscheduling",
    GroupKind.NATIVE: "native",
}
TASK_NAME = re.compile(r"[^a-z0-9-]+")
BINARY = (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


@dataclass(frozen=True)
class Gang:
    """A gang read: its trace job, its run time, and what of it the trace does not play."""

    job: TraceJob
    estimate: Estimate
    dropped: tuple[str, ...] = ()  # `namespace/name: field not played`


@dataclass(frozen=True)
class LeftOut:
    """A gang that is no job of the trace: `namespace/name: why`."""

    why: str


class GangReader:
    """Reads gangs into trace jobs, with the raw objects' fields the models leave out (start
    and creation times, deadlines, the owning Jobs)."""

    def __init__(
        self,
        raw: RawCluster,
        taken_at: float,
        history: RunHistory,
        default: tuple[float, float] | None,
    ) -> None:
        self.taken_at = taken_at
        self.history = history
        self.default = default
        self.pods = {_meta(p).get("uid", ""): p for p in raw.pods}
        self.times = {
            _meta(item).get("uid", ""): parse_time(_meta(item).get("creationTimestamp")) or 0.0
            for items in (raw.pods, raw.volcano_groups, raw.coscheduling_groups, raw.native_groups)
            for item in items
        }
        self.jobs: dict[tuple[str, str], Job] = {}  # (namespace, PodGroup name) -> Volcano Job
        for item in raw.volcano_jobs:
            job = Job.model_validate(item)
            self.jobs[(job.metadata.namespace, job.pod_group_name)] = job
        self.batch_jobs = {
            (_meta(j).get("namespace", ""), _meta(j).get("name", "")): j for j in raw.batch_jobs
        }

    def created(self, uid: str) -> float:
        """When the object `uid` (a pod, a PodGroup) was created, in epoch seconds; 0 unknown."""
        return self.times.get(uid, 0.0)

    def gang(self, group: PodGroup, members: list[Pod]) -> Gang | LeftOut:
        """The PodGroup `group` with its pods not finished, `members`, as a trace job."""
        meta = group.metadata
        minimum = group.spec.min_member or len(members)
        if minimum > len(members):
            return LeftOut(
                f"{group.key}: {len(members)} of its {minimum} pods exist (the others are not "
                "created yet)"
            )
        bound = [pod for pod in members if pod.spec.node_name]
        started = self._started(bound) if len(bound) >= minimum else None
        dropped = (
            (f"{group.key}: subGroupPolicy not played",) if group.spec.sub_group_policy else ()
        )
        job = self.jobs.get((meta.namespace, meta.name))
        owner = f"{meta.namespace}/{job.metadata.name}" if job is not None else group.key
        facts = RunFacts(
            owner=owner,
            queue=group.spec.queue or DEFAULT_QUEUE,
            elapsed=0.0 if started is None else -started,
            deadline=self._deadline(bound, started),
            annotation=_first(
                m.annotations.get(RUN_TIME_ANNOTATION) for m in _metas(job, group, members)
            ),
            running_estimate=(
                duration_or_none(job.spec.running_estimate) if job is not None else None
            ),
        )
        estimated = estimate(facts, self.history, self.default)
        tasks = self._tasks(members, group, estimated)
        made = TraceJob(
            name=job.metadata.name if job is not None else meta.name,
            namespace=meta.namespace,
            kind=KIND_NAMES[group.group_kind],
            queue=group.spec.queue or DEFAULT_QUEUE,
            priority=max(pod.spec.priority for pod in members),
            priority_class=group.spec.priority_class_name
            or members[0].spec.priority_class_name
            or None,
            preemptable=preemptable(meta),
            min_available=minimum,
            gather_timeout=group.gather_timeout,
            network_topology=network_topology(group.spec.network_topology),
            tasks=tasks,
            started=started,
            run_time=trace_run_time(estimated),
        )
        return Gang(made, estimated, dropped)

    def single(self, pod: Pod) -> Gang:
        """A pending pod of a served scheduler that names no gang: a gang of one."""
        facts = RunFacts(
            owner=pod.metadata.key,
            queue=DEFAULT_QUEUE,
            elapsed=0.0,
            deadline=None,
            annotation=pod.metadata.annotations.get(RUN_TIME_ANNOTATION),
            running_estimate=None,
        )
        estimated = estimate(facts, self.history, self.default)
        job = TraceJob(
            name=pod.metadata.name,
            namespace=pod.metadata.namespace,
            priority=pod.spec.priority,
            priority_class=pod.spec.priority_class_name or None,
            tasks=self._tasks([pod], None, estimated),
            run_time=trace_run_time(estimated),
        )
        return Gang(job, estimated)

    def _started(self, bound: Sequence[Pod]) -> float | None:
        """When the gang started, in seconds from the snapshot (<= 0): the earliest start of its
        bound pods (a pod bound but not yet started: now)."""
        starts = [
            parse_time(
                ((self.pods.get(pod.metadata.uid) or {}).get("status") or {}).get("startTime")
            )
            for pod in bound
        ]
        known = [start for start in starts if start is not None]
        if not known:
            return 0.0
        return min(0.0, min(known) - self.taken_at)

    def _deadline(self, bound: Sequence[Pod], started: float | None) -> float | None:
        """Seconds from the gang's start after which a deadline ends it: the earliest of its
        pods' activeDeadlineSeconds (from each pod's start) and their batch Jobs'."""
        if started is None:
            return None
        gang_start = self.taken_at + started
        ends: list[float] = []
        for pod in bound:
            raw = self.pods.get(pod.metadata.uid) or {}
            spec, status = raw.get("spec") or {}, raw.get("status") or {}
            limit, start = spec.get("activeDeadlineSeconds"), parse_time(status.get("startTime"))
            if isinstance(limit, int) and start is not None:
                ends.append(start + limit)
            for owner in _meta(raw).get("ownerReferences") or ():
                if owner.get("kind") != "Job" or owner.get("apiVersion") != "batch/v1":
                    continue
                job = self.batch_jobs.get((pod.metadata.namespace, owner.get("name", "")))
                if job is None:
                    continue
                limit = (job.get("spec") or {}).get("activeDeadlineSeconds")
                start = parse_time((job.get("status") or {}).get("startTime"))
                if isinstance(limit, int) and start is not None:
                    ends.append(start + limit)
        return max(0.0, min(ends) - gang_start) if ends else None

    def _spec(self, pod: Pod) -> Mapping[str, Any]:
        """The pod's spec as listed; for a pod its Job's controller has not made yet, as the
        cache expects it (its tolerations and node affinity are the template's)."""
        listed = self.pods.get(pod.metadata.uid)
        if listed is not None:
            spec: Mapping[str, Any] = listed.get("spec") or {}
            return spec
        return pod.spec.model_dump(by_alias=True, exclude_defaults=True, mode="json")

    def _tasks(
        self, members: Sequence[Pod], group: PodGroup | None, estimated: Estimate
    ) -> tuple[Task, ...]:
        """The gang's pods as tasks: by task name, request and node constraints, in name
        order; a task name repeated for pods that differ gets a number."""
        split: dict[tuple[Any, ...], list[Pod]] = {}
        for pod in sorted(members, key=lambda p: natural_key(p.metadata.name)):
            raw_spec = self._spec(pod)
            split.setdefault(
                (
                    task_of(pod),
                    tuple(sorted(pod.request.items())),
                    repr(pod.spec.node_selector),
                    repr(raw_spec.get("tolerations") or ()),
                    repr((raw_spec.get("affinity") or {}).get("nodeAffinity")),
                ),
                [],
            ).append(pod)
        duration = estimated.expected if estimated.expected < FOREVER else FOREVER
        minimums = group.spec.min_task_member if group is not None else {}
        names: set[str] = set()
        tasks = []
        for (task, *_), pods in split.items():
            name = _task_name(task or "pod", names)
            first = pods[0]
            raw_spec = self._spec(first)
            request = first.request
            node_affinity = (raw_spec.get("affinity") or {}).get("nodeAffinity")
            tasks.append(
                Task(
                    name=name,
                    replicas=len(pods),
                    cpu=quantity(request, "cpu"),
                    memory=quantity(request, "memory"),
                    gpu=quantity(request, GPU) if request[GPU] else None,
                    duration=max(duration, SHORTEST),
                    min_available=(
                        min(minimums[task], len(pods))
                        if task in minimums and name == task
                        else None
                    ),
                    node_selector=dict(first.spec.node_selector),
                    tolerations=tuple(raw_spec.get("tolerations") or ()),
                    affinity={"nodeAffinity": node_affinity} if node_affinity else None,
                    pods=tuple(
                        TracePod(name=pod.metadata.name, node=pod.spec.node_name or None)
                        for pod in pods
                    ),
                )
            )
        return tuple(tasks)


def network_topology(topology: NetworkTopology | None) -> TraceNetworkTopology | None:
    """A PodGroup's or Job's network topology as a trace job's (highestTierAllowed over
    highestTierName, as Volcano's controller copies it); None when it names no tier."""
    if topology is None:
        return None
    tier, name = topology.highest_tier_allowed, topology.highest_tier_name or None
    if tier is None and name is None:
        return None
    return TraceNetworkTopology(
        mode=topology.mode,
        highest_tier_allowed=tier,
        highest_tier_name=None if tier is not None else name,
    )


def trace_run_time(estimated: Estimate) -> RunTime:
    """An estimate as a trace job's run time: held within [SHORTEST, FOREVER], as its tasks'
    durations are."""
    high = min(max(estimated.high, SHORTEST), FOREVER)
    return RunTime(low=min(estimated.low, high), high=high, source=estimated.source)


def quantity(resources: Resources, name: str) -> str:
    """`name`'s amount exactly, as a quantity a person reads: `500m`, `4`, `32Gi`."""
    units = resources[name]
    if name != "cpu" and units:
        for suffix, size in BINARY:
            if units % size == 0:
                return f"{units // size}{suffix}"
    return units_quantity(units, name)


def _task_name(task: str, taken: set[str]) -> str:
    base = TASK_NAME.sub("-", task.lower()).strip("-")[:50] or "pod"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    taken.add(name)
    return name


def _meta(item: Mapping[str, Any]) -> Mapping[str, Any]:
    return item.get("metadata") or {}


def _metas(job: Job | None, group: PodGroup, members: Sequence[Pod]) -> Iterable[Any]:
    if job is not None:
        yield job.metadata
    yield group.metadata
    yield members[0].metadata


def _first(values: Iterable[str | None]) -> str | None:
    return next((value for value in values if value), None)
