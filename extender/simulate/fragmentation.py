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
hard topologies keeps it 0). The tiers are the core's: `gangs.topology.Topology` over the trace's
nodes and HyperNodes. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.cache.state import ClusterState
from extender.framework.engine import Topology
from extender.simulate import world
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


def _topology(trace: Trace) -> Topology:
    """The trace's HyperNodes as the core resolves them, on a cluster of its nodes."""
    state = ClusterState()
    for node in world.nodes(trace):
        state.upsert_node(node)
    for hyper_node in world.hyper_nodes(trace):
        state.upsert_hyper_node(hyper_node)
    return Topology.of(state)


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
        if _outside(job, nodes, topology):
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


def _leaf_key(topology: Topology, node: str) -> str:
    leaf = topology.leaf(node)
    return node if leaf is None else leaf.name  # (a node under no HyperNode: a place apart)


def _asks(job: TraceJob) -> bool:
    return any(True for _ in job.topologies)


def _hard(job: TraceJob) -> bool:
    return any(asked.mode == "hard" for _, asked in job.topologies)


def _outside(job: TraceJob, nodes: Mapping[str, str], topology: Topology) -> bool:
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
    return any(not _within(asked, members, topology) for asked, members in groups.values())


def _within(asked: TraceNetworkTopology, nodes: set[str], topology: Topology) -> bool:
    """The nodes are all under one HyperNode of the tier asked or lower."""
    tier = asked.highest_tier_allowed
    if tier is None:
        assert asked.highest_tier_name is not None  # (the trace holds one of the two)
        tier = topology.tier_named(asked.highest_tier_name)  # (a tier the trace has)
    domain = topology.spanning(nodes)
    return domain is not None and (tier is None or domain.tier <= tier)
