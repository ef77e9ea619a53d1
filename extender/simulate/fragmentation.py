"""How far apart in the network each gang's pods were placed, on a trace with a topology: the
figures `lahar simulate` prints beside its table when the trace declares HyperNodes.

The placement read is the simulation's: the nodes each incarnation of a job had its pods bound
to (a restarted job's new pods are another placement). A gang is a job of more than one pod with
a pod bound; it is *spread* when some placement of it had pods under more than one lowest-tier
HyperNode (a node under none counts as one of its own). `asking` are the gangs that ask for a
network topology (the job's `networkTopology` or a partition's), and `asking_spread` those of
them spread. `hard` are the gangs with a hard topology, and `beyond` those of them with a
placement outside its bound: the job's pods not all within one HyperNode of the allowed tier or
lower, or a partition's pods not within one of the partition's tier (a scheduler that honours
hard topologies keeps it 0). The tiers are read through one door, `_topology`, the trace's
HyperNodes resolved to their nodes. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from extender.simulate.run import SimulationOutcome
from extender.simulate.trace import Trace, TraceJob, TraceNetworkTopology


@dataclass(frozen=True)
class Fragmentation:
    gangs: int  # jobs of more than one pod with a pod placed
    spread: int  # of those, placed under more than one lowest-tier HyperNode
    asking: int  # gangs that ask for a network topology
    asking_spread: int  # of those, spread
    hard: int  # gangs with a hard network topology (the job's or a partition's)
    beyond: int  # of those, placed outside the tier they allow

    @property
    def asking_share(self) -> float | None:
        """The part of the gangs asking for a topology that were spread (None: none asked)."""
        return self.asking_spread / self.asking if self.asking else None


@dataclass(frozen=True)
class _Domain:
    name: str
    tier: int
    nodes: frozenset[str]


class _Tiers:
    """The trace's HyperNodes resolved to the nodes under them: the lowest-tier one holding a
    node, and the lowest-tier one holding nodes together."""

    def __init__(self, trace: Trace) -> None:
        self._trace = trace

    @cached_property
    def domains(self) -> Mapping[str, _Domain]:
        made: dict[str, _Domain] = {}
        for hyper in self._trace.hyper_nodes:  # (lowest tiers first: members come before)
            nodes = set(hyper.nodes)
            for member in hyper.hyper_nodes:
                nodes |= made[member].nodes
            made[hyper.name] = _Domain(hyper.name, hyper.tier, frozenset(nodes))
        return made

    @cached_property
    def _ordered(self) -> list[_Domain]:
        return sorted(self.domains.values(), key=lambda d: (d.tier, d.name))

    def leaf(self, node: str) -> _Domain | None:
        return next((d for d in self._ordered if node in d.nodes), None)

    def spanning(self, nodes: Iterable[str]) -> _Domain | None:
        wanted = set(nodes)
        return next((d for d in self._ordered if wanted <= d.nodes), None)


def _topology(trace: Trace) -> _Tiers:
    """The trace's HyperNodes as the tiers of its network."""
    return _Tiers(trace)


def fragmentation(outcome: SimulationOutcome) -> Fragmentation | None:
    """The figures of the module docstring; None when the trace has no topology."""
    trace = outcome.trace
    if not trace.hyper_nodes:
        return None
    topology = _topology(trace)
    placements: dict[tuple[str, int], dict[str, str]] = {}  # (job, incarnation) -> pod -> node
    for interval in outcome.intervals:
        placements.setdefault((interval.job, interval.incarnation), {})[interval.pod] = (
            interval.node
        )
    spread: set[str] = set()
    beyond: set[str] = set()
    placed: set[str] = set()
    for (name, _), nodes in placements.items():
        job = outcome.jobs[name].job
        if job.size < 2:
            continue
        placed.add(name)
        leaves = {_leaf_key(topology, node) for node in nodes.values()}
        if len(leaves) > 1:
            spread.add(name)
        if _outside(job, nodes, topology, trace):
            beyond.add(name)
    asking = {name for name in placed if _asks(outcome.jobs[name].job)}
    hard = {name for name in placed if _hard(outcome.jobs[name].job)}
    return Fragmentation(
        gangs=len(placed),
        spread=len(spread),
        asking=len(asking),
        asking_spread=len(asking & spread),
        hard=len(hard),
        beyond=len(beyond & hard),
    )


def _leaf_key(topology: _Tiers, node: str) -> str:
    leaf = topology.leaf(node)
    return node if leaf is None else leaf.name  # (a node under no HyperNode: a place apart)


def _asks(job: TraceJob) -> bool:
    return any(True for _ in job.topologies)


def _hard(job: TraceJob) -> bool:
    return any(asked.mode == "hard" for _, asked in job.topologies)


def _outside(job: TraceJob, nodes: Mapping[str, str], topology: _Tiers, trace: Trace) -> bool:
    """Some hard topology of the job is broken by this placement (pod -> node)."""
    groups: dict[tuple[str, int], tuple[TraceNetworkTopology, set[str]]] = {}
    if job.network_topology is not None and job.network_topology.mode == "hard":
        groups[("", 0)] = (job.network_topology, set(nodes.values()))
    for task, index, pod in job.pods():
        policy = task.partition_policy
        if policy is None or policy.network_topology is None or pod not in nodes:
            continue
        if policy.network_topology.mode == "hard":
            partition = (task.name, index // policy.partition_size)
            groups.setdefault(partition, (policy.network_topology, set()))[1].add(nodes[pod])
    return any(not _within(asked, members, topology, trace) for asked, members in groups.values())


def _within(asked: TraceNetworkTopology, nodes: set[str], topology: _Tiers, trace: Trace) -> bool:
    """The nodes are all under one HyperNode of the tier asked or lower."""
    tier = asked.highest_tier_allowed
    if tier is None:
        assert asked.highest_tier_name is not None  # (the trace holds one of the two)
        tier = trace.tier_names[asked.highest_tier_name]
    domain = topology.spanning(nodes)
    return domain is not None and domain.tier <= tier
