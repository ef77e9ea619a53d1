"""HyperNodes built from node labels, as Volcano's label discovery builds them.

The input is a list of node labels from the nearest tier up (`rack`, then `spine`) and the
cluster's nodes. Every distinct value of the tier-1 label becomes a tier-1 HyperNode whose members
are the nodes carrying it, one `exactMatch` per node; every value of the tier-2 label a tier-2
HyperNode whose members are the tier-1 HyperNodes of its nodes; and so on up. A node is followed up
the tiers until the first label it lacks: a node without the tier-1 label is in no HyperNode
(`LabelTopology.unplaced`), one without the tier-2 label stops at its tier-1 HyperNode. A value
names one HyperNode across the whole cluster, as in Volcano (`rack=r1` under two spines is one
rack, not two).

A HyperNode has one parent (Volcano's scheduler refuses a second one), so a tier-k value whose
nodes carry different tier-(k+1) values is a `Conflict`, reported and not guessed at: the caller
refuses to write such a tree.

Names are deterministic, so building twice from the same labels gives the same objects and a
re-run updates instead of adding (Volcano draws a random suffix and finds its own HyperNodes again
by their labels; a command run now and then has nothing to remember them by):
`t<tier>-<value>` when the value is itself a valid name part (lower case letters, digits, `-`),
else `t<tier>-<value made lower case, other characters as '-'>.<hash of the value>`. The two
forms never meet (only the second has a `.`), the tier keeps equal values of two labels apart.
Each HyperNode carries, as Volcano's do, the label it was built from (`<label>: <value>`) and the
source label `volcano.sh/network-topology-source`, here with the value `lahar-node-labels`, so
Lahar finds and prunes its own HyperNodes and leaves Volcano's label discovery (source `label`)
and hand-made ones alone. The tier's name is the label unless given. Pure: models in, models out.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from extender.api.objects import Node, ObjectMeta
from extender.api.topology import (
    API_VERSION,
    HYPER_NODE,
    KIND,
    NODE,
    ExactMatch,
    HyperNode,
    HyperNodeSpec,
    MemberSelector,
    MemberSpec,
)

SOURCE_LABEL = "volcano.sh/network-topology-source"
SOURCE = "lahar-node-labels"
MAX_TIER_NAME = 253
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PLAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_HASH_CHARS = 10


@dataclass(frozen=True)
class LabelTier:
    """One tier: the node label whose values make its HyperNodes, and the tier's name."""

    label: str
    name: str


@dataclass(frozen=True)
class Conflict:
    """A tier-`tier` value whose nodes carry several values of the label above it."""

    label: str
    value: str
    tier: int
    parent_label: str
    parents: dict[str, tuple[str, ...]]  # each value of the label above -> its nodes, by name

    def __str__(self) -> str:
        under = "; ".join(
            f"{self.parent_label}={value} (nodes {', '.join(nodes)})"
            for value, nodes in sorted(self.parents.items())
        )
        return f"{self.label}={self.value} (tier {self.tier}) is under several values: {under}"


@dataclass(frozen=True)
class LabelTopology:
    """What the labels make: the HyperNodes (by tier, then name), the nodes in none of them
    (without the tier-1 label) and the values that would need two parents."""

    hyper_nodes: tuple[HyperNode, ...]
    unplaced: tuple[str, ...]
    conflicts: tuple[Conflict, ...]


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a label key (`[prefix/]name`), or None."""
    prefix, _, name = key.rpartition("/")
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return (
            f"{key!r}: the name part must be 1-63 characters, letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"{key!r}: the prefix must be a DNS subdomain (lower case, at most 253 characters)"
    return None


def label_tiers(
    labels: Sequence[str],
    names: Sequence[str] = (),
    *,
    label_flag: str = "--label",
    name_flag: str = "--tier-name",
) -> tuple[LabelTier, ...]:
    """The tiers from `--label` (nearest first) and `--tier-name` (in the same order; a tier
    without one is named by its label, as Volcano names it). A ValueError names the flag
    (`label_flag`, `name_flag`: the command's own names for them) and why."""
    if not labels:
        raise ValueError(f"{label_flag}: give at least one node label (the nearest tier first)")
    if len(names) > len(labels):
        raise ValueError(
            f"{name_flag}: {len(names)} names for {len(labels)} labels "
            f"(at most one per {label_flag})"
        )
    for key in labels:
        if (problem := label_key_problem(key)) is not None:
            raise ValueError(f"{label_flag}: {problem}")
    repeated = sorted({key for key in labels if list(labels).count(key) > 1})
    if repeated:
        raise ValueError(f"{label_flag}: {', '.join(repeated)} given more than once")
    for name in names:
        if not name or len(name) > MAX_TIER_NAME:
            raise ValueError(f"{name_flag}: {name!r} must be 1-{MAX_TIER_NAME} characters")
    given = list(names) + list(labels[len(names) :])
    return tuple(LabelTier(key, name) for key, name in zip(labels, given, strict=True))


def hyper_node_name(tier: int, value: str) -> str:
    """The HyperNode a tier's label value makes (see the module's note on names)."""
    if _PLAIN.match(value):
        return f"t{tier}-{value}"
    slug = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-") or "v"
    digest = hashlib.sha256(value.encode()).hexdigest()[:_HASH_CHARS]
    return f"t{tier}-{slug}.{digest}"


def build(tiers: Sequence[LabelTier], nodes: Iterable[Node]) -> LabelTopology:
    """The HyperNodes `tiers` make of `nodes`' labels."""
    members: list[dict[str, set[str]]] = [defaultdict(set) for _ in tiers]  # value -> members
    # For each tier but the top: value -> value of the label above -> the nodes saying so.
    parents: list[dict[str, dict[str, list[str]]]] = [
        defaultdict(lambda: defaultdict(list)) for _ in tiers
    ]
    unplaced: list[str] = []
    for node in sorted(nodes, key=lambda n: n.metadata.name):
        labels, member = node.metadata.labels, node.metadata.name
        if tiers[0].label not in labels:
            unplaced.append(member)
            continue
        for index, tier in enumerate(tiers):
            value = labels.get(tier.label)
            if value is None:
                break
            members[index][value].add(member)
            above = tiers[index + 1].label if index + 1 < len(tiers) else None
            if above is not None and above in labels:
                parents[index][value][labels[above]].append(node.metadata.name)
            member = hyper_node_name(index + 1, value)
    conflicts = tuple(
        Conflict(
            label=tiers[index].label,
            value=value,
            tier=index + 1,
            parent_label=tiers[index + 1].label,
            parents={above: tuple(names) for above, names in seen.items()},
        )
        for index in range(len(tiers) - 1)
        for value, seen in sorted(parents[index].items())
        if len(seen) > 1
    )
    hyper_nodes = sorted(
        (
            _hyper_node(index + 1, tier, value, sorted(members[index][value]))
            for index, tier in enumerate(tiers)
            for value in members[index]
        ),
        key=lambda h: (h.spec.tier, h.name),
    )
    return LabelTopology(tuple(hyper_nodes), tuple(unplaced), conflicts)


def _hyper_node(tier: int, label_tier: LabelTier, value: str, names: list[str]) -> HyperNode:
    kind = NODE if tier == 1 else HYPER_NODE
    return HyperNode(
        metadata=ObjectMeta(
            name=hyper_node_name(tier, value),
            labels={SOURCE_LABEL: SOURCE, label_tier.label: value},
        ),
        spec=HyperNodeSpec(
            tier=tier,
            tier_name=label_tier.name,
            members=[
                MemberSpec(type=kind, selector=MemberSelector(exact_match=ExactMatch(name=name)))
                for name in names
            ],
        ),
    )


def manifest(hyper_node: HyperNode) -> dict[str, Any]:
    """The HyperNode as `kubectl apply` takes it: apiVersion, kind, name, labels and spec."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": hyper_node.name, "labels": dict(hyper_node.metadata.labels)},
        "spec": hyper_node.spec.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def is_own(hyper_node: dict[str, Any]) -> bool:
    """Whether a HyperNode as the API returns it was made by this builder (its source label)."""
    labels = (hyper_node.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(SOURCE_LABEL) == SOURCE)


@dataclass(frozen=True)
class Plan:
    """What writing the wanted HyperNodes takes, against those the cluster has: the ones to
    create, to update and left as they are (as manifests), the ones this builder made before
    that are no longer wanted (to delete, by name) and the wanted names that HyperNodes this
    builder did not make use already (`foreign`: written over, they would be taken from
    whoever made them, so the caller refuses)."""

    create: tuple[dict[str, Any], ...]
    update: tuple[dict[str, Any], ...]
    unchanged: tuple[dict[str, Any], ...]
    delete: tuple[str, ...]
    foreign: tuple[str, ...]


def plan(wanted: Sequence[dict[str, Any]], existing: Sequence[dict[str, Any]]) -> Plan:
    """Compare the wanted manifests with the HyperNodes the API returned (every one of them)."""
    found = {h["metadata"]["name"]: h for h in existing}
    names = {m["metadata"]["name"] for m in wanted}
    create, update, unchanged, foreign = [], [], [], []
    for item in wanted:
        have = found.get(item["metadata"]["name"])
        if have is None:
            create.append(item)
        elif not is_own(have):
            foreign.append(item["metadata"]["name"])
        elif have.get("spec") == item["spec"] and _labelled(have, item["metadata"]["labels"]):
            unchanged.append(item)
        else:
            update.append(item)
    stale = sorted(name for name, h in found.items() if is_own(h) and name not in names)
    return Plan(tuple(create), tuple(update), tuple(unchanged), tuple(stale), tuple(foreign))


def _labelled(hyper_node: dict[str, Any], labels: dict[str, str]) -> bool:
    have = (hyper_node.get("metadata") or {}).get("labels") or {}
    return all(have.get(key) == value for key, value in labels.items())
