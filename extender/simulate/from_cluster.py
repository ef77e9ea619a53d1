"""A snapshot of a live cluster as a trace: what `lahar simulate --from-cluster` and `lahar
whatif` replay.

The objects listed from the API server (`kube.snapshot_lists.RawCluster`) are read the way the
extender reads them: into a `ClusterState` of their own through the extender's own kinds
(`cache.kinds`), so a Coscheduling or native PodGroup is the same gang it is to the engine, and a
Volcano Job still waiting for its admission shows the pods its controller will make
(`cache.expected`). The trace then holds:

- the nodes, grouped by what tells them apart to a scheduler (allocatable, labels but the
  hostname, taints, cordoned), each group listing its node names;
- the queues with every field the engine reads (weight, capability, guarantee, deserved,
  reclaimable, priority, parent, state);
- one job per gang not yet finished, its pods split into tasks by task name, request and node
  constraints, in the order the gangs were created (the fair order breaks ties that way); a gang
  whose minimum runs is `started` (when the first of its pods started) and each bound pod names
  its node; a pending pod of a served scheduler that names no gang is a gang of one;
- what bound pods outside any gang take on each node (`occupied`: DaemonSets, other schedulers'
  pods, plain pods, the running pods of a gang left out), for the whole run;
- the HyperNodes, their selectors resolved by the engine's own `Topology`, as exact members.

Every gang's run time is `simulate.run_times.estimate`'s (a range and its source): a started
gang's task duration is the expected total, its `runTime` the range. What the trace cannot hold
is counted in `Limits`, which the answer states. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extender.api.batch import Job
from extender.api.duration import parse_duration
from extender.api.objects import Node, Pod
from extender.api.preemptable import preemptable
from extender.api.quantity import units_quantity
from extender.api.resources import PODS, Resources
from extender.api.run_times import RUN_TIME_ANNOTATION, RunHistory
from extender.api.scheduling import (
    CLOSED,
    CLOSING,
    DEFAULT_QUEUE,
    ROOT,
    SERVED_SCHEDULERS,
    GroupKind,
    NetworkTopology,
    PodGroup,
    Queue,
    task_of,
)
from extender.api.times import parse_time, rfc3339
from extender.cache.kinds import KINDS
from extender.cache.state import ClusterState
from extender.framework.engine import Topology
from extender.kube.snapshot_lists import SNAPSHOT_KINDS, RawCluster
from extender.simulate.run_times import Estimate, RunFacts, estimate
from extender.simulate.trace import (
    NodeGroup,
    Occupied,
    RunTime,
    Task,
    Trace,
    TraceHyperNode,
    TraceJob,
    TraceNetworkTopology,
    TracePod,
    TraceQueue,
    TraceTaint,
    TraceTopology,
)

HOSTNAME = "kubernetes.io/hostname"
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


@dataclass
class Limits:
    """What the snapshot could not carry, each with the objects it concerns."""

    pending_elsewhere: list[str] = field(default_factory=list)  # other schedulers' pending pods
    outside_gangs: int = 0  # bound pods of no gang: their capacity stays taken
    left_out: list[str] = field(default_factory=list)  # gangs left out, each with why
    dropped: list[str] = field(default_factory=list)  # fields not modelled, per gang
    skipped: list[str] = field(default_factory=list)  # run-time sources unreadable, per gang


@dataclass(frozen=True)
class Snapshot:
    trace: Trace
    estimates: Mapping[str, Estimate]  # per trace job (`namespace/name`): its run time
    limits: Limits


def snapshot(
    raw: RawCluster,
    taken_at: float,
    history: RunHistory,
    default: tuple[float, float] | None = None,
) -> Snapshot:
    """The cluster `raw` lists as a trace whose time 0 is `taken_at` (epoch seconds)."""
    state = load_state(raw)
    reader = _Reader(raw, taken_at, history, default)
    limits = Limits()
    jobs: list[tuple[float, str, TraceJob]] = []
    estimates: dict[str, Estimate] = {}
    in_gangs: set[str] = set()
    nodes = [Node.model_validate(item) for item in raw.nodes]
    known = {node.metadata.name for node in nodes}
    for key, group in state.pod_groups.items():
        members = [pod for pod in state.gang_pods(key) if not pod.finished]
        in_gangs.update(pod.metadata.uid for pod in members)
        gone = [pod for pod in members if pod.spec.node_name and pod.spec.node_name not in known]
        limits.left_out += [
            f"pod {pod.metadata.key}: bound to node {pod.spec.node_name}, which no longer exists"
            for pod in gone
        ]
        members = [pod for pod in members if pod not in gone]
        if group.status.phase in ("Completed", "Failed") or not members:
            continue
        unplayable = queue_problem(group.spec.queue or DEFAULT_QUEUE, state.queues)
        if unplayable is not None:
            limits.left_out.append(f"{group.key}: {unplayable}")
            made = None
        else:
            made = reader.gang(group, members, limits)
        if made is None:  # left out: what its bound pods hold stays held, as `occupied`
            in_gangs.difference_update(p.metadata.uid for p in members if p.spec.node_name)
        else:
            job, estimated = made
            jobs.append((reader.created(group.metadata.uid), key, job))
            estimates[f"{job.namespace}/{job.name}"] = estimated
    occupied: dict[str, Resources] = defaultdict(Resources)
    counted: dict[str, int] = defaultdict(int)
    for uid, pod in state.pods.items():
        if uid in in_gangs or pod.finished:
            continue
        if pod.spec.node_name:
            occupied[pod.spec.node_name] += pod.request
            counted[pod.spec.node_name] += 1
            limits.outside_gangs += 1
        elif pod.spec.scheduler_name in SERVED_SCHEDULERS and not pod.metadata.deletion_timestamp:
            job, estimated = reader.single(pod)
            jobs.append((reader.created(uid), pod.metadata.key, job))
            estimates[pod.metadata.key] = estimated
        else:
            limits.pending_elsewhere.append(pod.metadata.key)
    jobs.sort(key=lambda item: (item[0], item[1]))
    trace = Trace(
        taken_at=rfc3339(taken_at),
        priority_classes={c.metadata.name: c.value for c in state.priority_classes.values()},
        nodes=node_groups(nodes),
        queues=queues(state.queues.values()),
        jobs=tuple(job for _, _, job in jobs),
        topology=topology(state, nodes),
        occupied=tuple(
            _occupied(node, occupied[node], counted[node])
            for node in sorted(occupied)
            if node in known
        ),
    )
    limits.pending_elsewhere.sort()
    limits.skipped = [f"{key}: {e.problem}" for key, e in sorted(estimates.items()) if e.problem]
    return Snapshot(trace, estimates, limits)


def load_state(raw: RawCluster) -> ClusterState:
    """A cluster state of its own holding what `raw` lists, read by the extender's kinds."""
    state = ClusterState()
    lists = {listed.path: getattr(raw, listed.into) for listed in SNAPSHOT_KINDS}
    for kind in KINDS:
        items = lists.get(kind.path)
        if items is None:
            continue
        kind.replace(state, [kind.model.model_validate(item) for item in items])
    return state


def node_groups(nodes: Sequence[Node]) -> tuple[NodeGroup, ...]:
    """The nodes grouped by what a scheduler tells apart: allocatable, labels but the hostname,
    taints and whether cordoned; groups in the order of their first node, by name."""
    groups: dict[tuple[Any, ...], list[Node]] = {}
    for node in sorted(nodes, key=lambda n: n.metadata.name):
        shape = (
            tuple(sorted(node.status.allocatable.items())),
            tuple(sorted((k, v) for k, v in node.metadata.labels.items() if k != HOSTNAME)),
            tuple((t.key, t.value, t.effect) for t in node.spec.taints),
            node.spec.unschedulable,
        )
        groups.setdefault(shape, []).append(node)
    made = []
    for members in groups.values():
        first = members[0]
        allocatable = first.status.allocatable
        labels = {k: v for k, v in first.metadata.labels.items() if k != HOSTNAME}
        made.append(
            NodeGroup(
                names=tuple(node.metadata.name for node in members),
                cpu=quantity(allocatable, "cpu"),
                memory=quantity(allocatable, "memory"),
                gpu=quantity(allocatable, GPU) if allocatable[GPU] else None,
                pods=int(allocatable[PODS]) if allocatable[PODS] else 110,
                labels=labels,
                taints=tuple(
                    TraceTaint(key=t.key, value=t.value, effect=t.effect)
                    for t in first.spec.taints
                    if t.effect in ("NoSchedule", "PreferNoSchedule", "NoExecute")
                ),
                unschedulable=first.spec.unschedulable,
            )
        )
    return tuple(made)


def queues(listed: Iterable[Queue]) -> tuple[TraceQueue, ...]:
    """Every queue but root, with the fields the engine reads."""
    made = []
    everyone = sorted(listed, key=lambda q: q.metadata.name)
    names = {queue.metadata.name for queue in everyone}
    for queue in everyone:
        if queue.metadata.name == ROOT:
            continue
        spec = queue.spec
        made.append(
            TraceQueue(
                name=queue.metadata.name,
                weight=spec.weight,
                capability=_amounts(spec.capability),
                guarantee=_amounts(spec.guarantee.resource),
                deserved=_amounts(spec.deserved),
                reclaimable=spec.reclaimable,
                priority=spec.priority,
                # (a parent that does not exist: the engine hangs the queue under root)
                parent=spec.parent if spec.parent in names else None,
                state="Closed" if queue.status.state in (CLOSED, CLOSING) else "Open",
            )
        )
    return tuple(made)


def queue_problem(name: str, listed: Mapping[str, Queue]) -> str | None:
    """Why a gang in queue `name` is no job of the trace, None when it is one: the engine keeps
    a gang whose queue does not exist or has child queues waiting, and a trace's jobs are in
    leaf queues it lists."""
    if name == ROOT:
        return f"its queue is {ROOT}, the top of the queue tree: gangs go in leaf queues"
    if name != DEFAULT_QUEUE and name not in listed:
        return f"its queue {name} does not exist (it waits until the queue is made)"
    children = sorted(q for q, queue in listed.items() if (queue.spec.parent or None) == name)
    if children:
        return f"its queue {name} has child queues ({', '.join(children)}): gangs go in leaf queues"
    return None


def topology(state: ClusterState, nodes: Sequence[Node]) -> TraceTopology | None:
    """The HyperNodes as exact lists, resolved by the engine's `Topology`: a HyperNode's members
    are the highest HyperNodes below it and the nodes none of those holds."""
    if not state.hyper_nodes:
        return None
    labels = {node.metadata.name: node.metadata.labels for node in nodes}
    resolved = Topology(state.hyper_nodes, labels)
    domains = sorted(
        (d for d in resolved.domains.values() if d.nodes), key=lambda d: (d.tier, d.name)
    )
    listed = []
    for domain in domains:
        below = [d for d in domains if d.tier < domain.tier and d.nodes <= domain.nodes]
        # (of two over the same nodes, the lower is a member of the higher: a spine over one
        # switch holds that switch, and whatever holds the spine lists the spine alone)
        highest = [
            d
            for d in below
            if not any(
                d.nodes < e.nodes or (d.nodes == e.nodes and d.tier < e.tier)
                for e in below
                if e is not d
            )
        ]
        direct = domain.nodes - frozenset().union(*(d.nodes for d in highest))
        listed.append(
            TraceHyperNode(
                name=domain.name,
                tier=domain.tier,
                tier_name=domain.tier_name,
                nodes=tuple(sorted(direct)),
                hyper_nodes=tuple(d.name for d in highest),
            )
        )
    return TraceTopology(hyper_nodes=tuple(listed)) if listed else None


class _Reader:
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
        return self.times.get(uid, 0.0)

    def gang(
        self, group: PodGroup, members: list[Pod], limits: Limits
    ) -> tuple[TraceJob, Estimate] | None:
        meta = group.metadata
        minimum = group.spec.min_member or len(members)
        if minimum > len(members):
            limits.left_out.append(
                f"{group.key}: {len(members)} of its {minimum} pods exist (the others are not "
                "created yet)"
            )
            return None
        bound = [pod for pod in members if pod.spec.node_name]
        started = self._started(bound) if len(bound) >= minimum else None
        if group.spec.sub_group_policy:
            limits.dropped.append(f"{group.key}: subGroupPolicy not played")
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
            running_estimate=_seconds(job.spec.running_estimate) if job is not None else None,
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
        return made, estimated

    def single(self, pod: Pod) -> tuple[TraceJob, Estimate]:
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
        return job, estimated

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
        for pod in sorted(members, key=lambda p: _natural(p.metadata.name)):
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


def _occupied(node: str, taken: Resources, pods: int) -> Occupied:
    return Occupied(
        node=node,
        cpu=quantity(taken, "cpu"),
        memory=quantity(taken, "memory"),
        gpu=quantity(taken, GPU) if taken[GPU] else None,
        pods=pods,
    )


def _amounts(resources: Resources) -> dict[str, str]:
    return {name: quantity(resources, name) for name in resources if name != PODS}


BINARY = (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


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


def _natural(name: str) -> tuple[Any, ...]:
    """`w-10` after `w-9`: digits compared as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _meta(item: Mapping[str, Any]) -> Mapping[str, Any]:
    return item.get("metadata") or {}


def _metas(job: Job | None, group: PodGroup, members: Sequence[Pod]) -> Iterable[Any]:
    if job is not None:
        yield job.metadata
    yield group.metadata
    yield members[0].metadata


def _seconds(duration: str | None) -> float | None:
    """A Go duration in seconds; None when absent or unreadable (the webhook refuses those)."""
    if not duration:
        return None
    try:
        return parse_duration(duration)
    except ValueError:
        return None


def _first(values: Iterable[str | None]) -> str | None:
    return next((value for value in values if value), None)
