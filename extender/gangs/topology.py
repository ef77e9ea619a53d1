"""The network topology as placement reads it: HyperNodes resolved to the nodes under them, and
what a gang's `networkTopology` and partitions ask of them.

`Topology.of(state)` resolves the cluster's HyperNodes (`api.topology`) once per topology change
(`ClusterState.stamp.topology`): each becomes a `Domain`, its tier and every node under it,
through its member HyperNodes too (a member HyperNode missing, or a loop, adds nothing). Nodes a
selector names that do not exist are left out.

`reach_of` turns a gang's PodGroup into a `Reach`, what its placement must respect:
- the gang's `networkTopology`: *hard*, every member inside one Domain of tier at most the
  allowed one (`highestTierAllowed`, or the tier `highestTierName` names), or the gang waits
  whole; *soft*, the same when some Domain can take the gang whole, anywhere otherwise;
- its `subGroupPolicy` (Volcano's partitions): the pods each policy selects, split by the values
  of its `matchLabelKeys` (the partition id), each partition inside one Domain of its own tier.
A Domain's candidates come lowest tier first; placement (`gangs.placement`) takes, of those that
have room for the members, the tightest (least free cpu): binpack at the level of HyperNodes, so
that whole switches stay free for the gangs that need one. Members already placed anchor the gang
to the Domains that contain them. A gang that asks nothing has no Reach and is placed as always.

`stale_node_counts` says which HyperNodes' `status.nodeCount` (what `kubectl get hypernodes`
shows) is not the number of nodes under them, as Volcano counts them: directly or through member
HyperNodes; the leader writes those (`server.hyper_node_writer`). Pure.

The same concept at other layers: `api.topology`, the HyperNode model, below; `admission.topology`,
the rules on a Job's `networkTopology` and partitions, above.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from pydantic import ValidationError

from extender.api.objects import Pod
from extender.api.scheduling import NetworkTopology, PodGroup, SubGroupPolicy
from extender.api.topology import (
    HYPER_NODE,
    NODE,
    HyperNode,
    LabelSelector,
    MemberSelector,
    members_of,
)
from extender.cache.state import ClusterState


@dataclass(frozen=True, eq=False)
class Domain:
    """One HyperNode, resolved: the nodes under it, directly or through its members."""

    name: str
    tier: int
    tier_name: str | None
    nodes: frozenset[str]

    def __repr__(self) -> str:
        return f"Domain({self.name!r}, tier {self.tier}, {len(self.nodes)} nodes)"


class Topology:
    """Every HyperNode as a Domain, with the lowest-tier one containing each node."""

    def __init__(
        self, hyper_nodes: Mapping[str, HyperNode], nodes: Mapping[str, Mapping[str, str]]
    ):
        self.domains: dict[str, Domain] = {}
        listed = [(name, labels) for name, labels in nodes.items()]
        resolving: set[str] = set()

        def resolve(name: str) -> Domain | None:
            if name in self.domains:
                return self.domains[name]
            hyper_node = hyper_nodes.get(name)
            if hyper_node is None or name in resolving:
                return None  # missing, or a loop
            resolving.add(name)
            under: set[str] = set()
            for member in hyper_node.spec.members or ():
                if member.type == NODE:
                    under.update(n for n in members_of(member.selector, listed) if n in nodes)
                elif member.type == HYPER_NODE:
                    for child in _hyper_node_members(member.selector, hyper_nodes):
                        found = resolve(child)
                        if found is not None:
                            under.update(found.nodes)
            resolving.discard(name)
            spec = hyper_node.spec
            domain = Domain(name, spec.tier, spec.tier_name or None, frozenset(under))
            self.domains[name] = domain
            return domain

        for name in sorted(hyper_nodes):
            resolve(name)
        self._leaf: dict[str, Domain] = {}
        for domain in sorted(self.domains.values(), key=lambda d: (-d.tier, d.name)):
            for node in domain.nodes:
                self._leaf[node] = domain  # (the lowest tier written last wins)
        self._tiers: dict[str, int] = {}
        for domain in self.domains.values():
            if domain.tier_name:
                known = self._tiers.get(domain.tier_name)
                self._tiers[domain.tier_name] = (
                    domain.tier if known is None else min(known, domain.tier)
                )
        # Lowest tier first, then by name: the order candidates are offered in.
        self.ordered = sorted(
            (d for d in self.domains.values() if d.nodes), key=lambda d: (d.tier, d.name)
        )

    @classmethod
    def of(cls, state: ClusterState) -> Topology:
        """The state's topology, resolved once per `ClusterState.stamp.topology`."""
        kept = _KEPT.get(state)
        if kept is not None and kept[0] == state.stamp.topology:
            return kept[1]
        nodes = {name: info.labels for name, info in state.view().nodes.items()}
        made = cls(state.hyper_nodes, nodes)
        _KEPT[state] = (state.stamp.topology, made)
        return made

    @property
    def empty(self) -> bool:
        return not self.ordered

    def leaf(self, node: str) -> Domain | None:
        """The lowest-tier HyperNode containing `node` (None: in none)."""
        return self._leaf.get(node)

    def spanning(self, nodes: Iterable[str]) -> Domain | None:
        """The lowest-tier HyperNode containing every one of `nodes` (None: none does)."""
        wanted = set(nodes)
        return next((d for d in self.ordered if wanted <= d.nodes), None)

    def tier_named(self, name: str) -> int | None:
        """The tier HyperNodes named `name` stand at (their tierName), None when none is."""
        return self._tiers.get(name)

    def within(self, limit: int | None, anchor: Iterable[str] = ()) -> tuple[Domain, ...]:
        """The Domains of tier at most `limit` (None: any) containing every node of `anchor`,
        lowest tier first."""
        anchored = set(anchor)
        return tuple(
            d for d in self.ordered if (limit is None or d.tier <= limit) and anchored <= d.nodes
        )


_KEPT: WeakKeyDictionary[ClusterState, tuple[int, Topology]] = WeakKeyDictionary()


def stale_node_counts(hyper_nodes: Mapping[str, HyperNode], topology: Topology) -> dict[str, int]:
    """The HyperNodes of `hyper_nodes` whose `status.nodeCount` is not the number of nodes under
    them on `topology` (none written counts as differing): name -> the count to write."""
    return {
        name: len(domain.nodes)
        for name, domain in topology.domains.items()
        if name in hyper_nodes and hyper_nodes[name].status.node_count != len(domain.nodes)
    }


def _hyper_node_members(
    selector: MemberSelector, hyper_nodes: Mapping[str, HyperNode]
) -> list[str]:
    """The HyperNodes a member of type HyperNode names: by exact name, or by pattern on the
    HyperNodes' names (a label selector chooses nodes only)."""
    listed: list[tuple[str, Mapping[str, str]]] = [(name, {}) for name in hyper_nodes]
    return sorted(members_of(selector.model_copy(update={"label_match": None}), listed))


@dataclass(frozen=True)
class Within:
    """Where a set of members must (hard) or should (soft) stay: inside one of `domains`, tried
    in that order (already narrowed to the tier and to the nodes members are on)."""

    hard: bool
    tier: int | None  # the highest tier allowed (None: any)
    domains: tuple[Domain, ...]

    @property
    def kind(self) -> str:
        """How explanations name the Domains it may use: `tier-1 HyperNode`."""
        return "HyperNode" if self.tier is None else f"tier-{self.tier} HyperNode"


@dataclass(frozen=True)
class Part:
    """One partition of a gang: the uids of its members, and where it must or should stay;
    `pending`, its members not on a node yet (a Domain is chosen for them all, though a plan
    may place only some), and `anchored`, whether some member is on a node already."""

    name: str
    uids: frozenset[str]
    within: Within
    pending: tuple[Pod, ...] = ()
    anchored: bool = False


@dataclass(frozen=True)
class Reach:
    """What a gang's placement must respect (see the module docstring): `gang`, where the gang
    as a whole stays (None: anywhere); `parts`, its partitions, each within its own Domain."""

    gang: Within | None
    parts: tuple[Part, ...] = ()
    problem: str | None = field(default=None)  # why a hard gang cannot be placed at all

    def part_of(self, uid: str) -> Part | None:
        return next((part for part in self.parts if uid in part.uids), None)


def reach_of(
    group: PodGroup, pods: Sequence[Pod], placed: Mapping[str, str], topology: Topology
) -> Reach | None:
    """What the group's `networkTopology` and `subGroupPolicy` ask of its `pods` (`placed`:
    uid -> node of those already on a node), on `topology`. None when it asks nothing."""
    spec = group.spec
    if spec.network_topology is None and not spec.sub_group_policy:
        return None
    gang = None
    problem = None
    if spec.network_topology is not None:
        gang, problem = _within(spec.network_topology, placed.values(), topology)
    parts: list[Part] = []
    by_uid = {pod.metadata.uid: pod for pod in pods}
    for policy in spec.sub_group_policy or ():
        if policy.network_topology is None:
            continue
        for name, uids in _partitions(policy, pods):
            anchor = [placed[uid] for uid in uids if uid in placed]
            within, why = _within(policy.network_topology, anchor, topology)
            if gang is not None and gang.hard:  # (a partition stays inside its gang's Domain)
                inside = [
                    d for d in within.domains if any(d.nodes <= g.nodes for g in gang.domains)
                ]
                within = Within(within.hard, within.tier, tuple(inside))
            if why is not None and problem is None:
                problem = f"partition {name}: {why}"
            pending = tuple(by_uid[uid] for uid in uids if uid not in placed)
            parts.append(Part(name, frozenset(uids), within, pending, bool(anchor)))
    if gang is None and not parts:
        return None
    return Reach(gang, tuple(parts), problem)


def _within(
    asked: NetworkTopology, anchor: Iterable[str], topology: Topology
) -> tuple[Within, str | None]:
    hard = asked.mode == "hard"
    limit = asked.highest_tier_allowed
    if limit is None and asked.highest_tier_name:
        limit = topology.tier_named(asked.highest_tier_name)
        if limit is None:
            why = f"no HyperNode has the tierName {asked.highest_tier_name!r}"
            return Within(hard, None, ()), why if hard else None
    domains = topology.within(limit, anchor)
    within = Within(hard, limit, domains)
    if domains or not hard:
        return within, None
    if topology.empty:
        return within, "the cluster has no HyperNode (topology.volcano.sh/v1alpha1)"
    return within, f"no {within.kind} contains every node its placed members run on"


def _partitions(policy: SubGroupPolicy, pods: Sequence[Pod]) -> list[tuple[str, list[str]]]:
    """The policy's partitions: the pods its label selector matches (every pod when it has
    none; none when it cannot be read: the CRD keeps it as any object), by the values of its
    `matchLabelKeys` (a pod lacking one of them is in no partition)."""
    try:
        selector = LabelSelector.model_validate(policy.label_selector or {})
    except ValidationError:
        return []
    keys = policy.match_label_keys or []
    found: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for pod in pods:
        labels = pod.metadata.labels
        if not selector.matches(labels):
            continue
        if keys and all(key in labels for key in keys):
            found[tuple(labels[key] for key in keys)].append(pod.metadata.uid)
    prefix = f"{policy.name}/" if policy.name else ""
    return [(prefix + "/".join(values), uids) for values, uids in sorted(found.items())]
