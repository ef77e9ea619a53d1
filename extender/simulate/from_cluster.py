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
- one job per gang not yet finished, read by `cluster_gangs.GangReader` (its tasks, when it
  started, its deadline and run time), in the order the gangs were created (the fair order breaks
  ties that way); a pending pod of a served scheduler that names no gang is a gang of one;
- what bound pods outside any gang take on each node (`occupied`: DaemonSets, other schedulers'
  pods, plain pods, the running pods of a gang left out), for the whole run;
- the HyperNodes, their selectors resolved by the engine's own `Topology`, as exact members.

Every gang's run time is `simulate.run_times.estimate`'s (a range and its source): a started
gang's task duration is the expected total, its `runTime` the range. What the trace cannot hold
(gangs left out and why, fields not played) is counted in `Limits`, which the answer states.
Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extender.api.objects import Node
from extender.api.resources import PODS, Resources
from extender.api.run_times import RunHistory
from extender.api.scheduling import (
    CLOSED,
    CLOSING,
    DEFAULT_QUEUE,
    ROOT,
    SERVED_SCHEDULERS,
    Queue,
)
from extender.api.times import rfc3339
from extender.cache.kinds import KINDS
from extender.cache.state import ClusterState
from extender.framework.engine import Topology
from extender.kube.snapshot_lists import SNAPSHOT_KINDS, RawCluster
from extender.simulate.cluster_gangs import GPU, Gang, GangReader, LeftOut, quantity
from extender.simulate.run_times import Estimate
from extender.simulate.trace import (
    NodeGroup,
    Occupied,
    Trace,
    TraceHyperNode,
    TraceJob,
    TraceQueue,
    TraceTaint,
    TraceTopology,
)

HOSTNAME = "kubernetes.io/hostname"


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
    reader = GangReader(raw, taken_at, history, default)
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
        read: Gang | LeftOut = (
            LeftOut(f"{group.key}: {unplayable}")
            if unplayable is not None
            else reader.gang(group, members)
        )
        if isinstance(read, LeftOut):  # what its bound pods hold stays held, as `occupied`
            limits.left_out.append(read.why)
            in_gangs.difference_update(p.metadata.uid for p in members if p.spec.node_name)
        else:
            limits.dropped += read.dropped
            jobs.append((reader.created(group.metadata.uid), key, read.job))
            estimates[f"{read.job.namespace}/{read.job.name}"] = read.estimate
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
            single = reader.single(pod)
            jobs.append((reader.created(uid), pod.metadata.key, single.job))
            estimates[pod.metadata.key] = single.estimate
        else:
            limits.pending_elsewhere.append(pod.metadata.key)
    jobs.sort(key=lambda item: (item[0], item[1]))
    trace = Trace(
        taken_at=rfc3339(taken_at),
        priority_classes={c.metadata.name: c.value for c in state.priority_classes.values()},
        default_priority_class=next(
            (c.metadata.name for c in state.priority_classes.values() if c.global_default), None
        ),
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
