"""HyperNodes from node labels: one per value and tier, nodes in tier 1, each tier's HyperNodes in
the next, nodes followed up to the first label they lack, two parents refused, names stable."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.api.objects import Node
from extender.api.topology import DNS_SUBDOMAIN, HyperNode
from extender.api.topology_labels import (
    SOURCE,
    SOURCE_LABEL,
    LabelTier,
    build,
    hyper_node_name,
    is_own,
    label_tiers,
    manifest,
    plan,
)
from tests.builders import make_hyper_node, make_node

RACK, SPINE, ZONE = "rack", "topology.example.com/spine", "zone"
TIERS = label_tiers([RACK, SPINE])


def node(name: str, **labels: str) -> Node:
    builder = make_node(name)
    for key, value in labels.items():
        builder = builder.label({"spine": SPINE}.get(key, key), value)
    return builder.model()


def labelled(name: str, rack: str | None, spine: str | None, zone: str | None) -> Node:
    """A node with those of the three labels that are given."""
    builder = make_node(name)
    for key, value in ((RACK, rack), (SPINE, spine), (ZONE, zone)):
        if value is not None:
            builder = builder.label(key, value)
    return builder.model()


def tree(hyper_nodes: tuple[HyperNode, ...]) -> dict[str, tuple[int, list[str]]]:
    """name -> (tier, member names)."""
    return {
        h.name: (h.spec.tier, [m.selector.exact_match.name for m in h.spec.members or ()])  # type: ignore[union-attr]
        for h in hyper_nodes
    }


@pytest.mark.parametrize(
    ("nodes", "expected", "unplaced"),
    [
        (
            [
                node("n0", rack="r0", spine="p0"),
                node("n1", rack="r0", spine="p0"),
                node("n2", rack="r1", spine="p0"),
                node("n3", rack="r2", spine="p1"),
            ],
            {
                "t1-r0": (1, ["n0", "n1"]),
                "t1-r1": (1, ["n2"]),
                "t1-r2": (1, ["n3"]),
                "t2-p0": (2, ["t1-r0", "t1-r1"]),
                "t2-p1": (2, ["t1-r2"]),
            },
            (),
        ),
        (
            [node("n0", rack="r0", spine="p0"), node("n1"), node("n2", spine="p0")],
            {"t1-r0": (1, ["n0"]), "t2-p0": (2, ["t1-r0"])},
            ("n1", "n2"),
        ),
        (
            [node("n0", rack="r0"), node("n1", rack="r1", spine="p0")],
            {"t1-r0": (1, ["n0"]), "t1-r1": (1, ["n1"]), "t2-p0": (2, ["t1-r1"])},
            (),
        ),
        (
            [node("n0", rack="r0"), node("n1", rack="r0", spine="p0")],
            {"t1-r0": (1, ["n0", "n1"]), "t2-p0": (2, ["t1-r0"])},
            (),
        ),
        (
            [node("n0", rack="1", spine="1")],
            {"t1-1": (1, ["n0"]), "t2-1": (2, ["t1-1"])},
            (),
        ),
        ([node("n0"), node("n1")], {}, ("n0", "n1")),
        ([], {}, ()),
    ],
    ids=[
        "two-tiers",
        "without-the-tier-1-label-in-none",
        "without-the-tier-2-label-stops-at-tier-1",
        "a-rack-partly-labelled-goes-under-its-spine",
        "equal-values-of-two-labels-apart-by-tier",
        "no-labels",
        "no-nodes",
    ],
)
def test_build(
    nodes: list[Node], expected: dict[str, tuple[int, list[str]]], unplaced: tuple[str, ...]
) -> None:
    built = build(TIERS, nodes)

    assert tree(built.hyper_nodes) == expected
    assert built.unplaced == unplaced
    assert built.conflicts == ()


def test_a_rack_under_two_spines_is_a_conflict_naming_both() -> None:
    nodes = [node("n0", rack="r0", spine="p0"), node("n1", rack="r0", spine="p1")]

    (conflict,) = build(TIERS, nodes).conflicts

    assert (conflict.label, conflict.value, conflict.tier) == (RACK, "r0", 1)
    assert conflict.parents == {"p0": ("n0",), "p1": ("n1",)}
    assert str(conflict) == (
        f"rack=r0 (tier 1) is under several values: {SPINE}=p0 (nodes n0); {SPINE}=p1 (nodes n1)"
    )


def test_hyper_nodes_carry_their_label_the_source_and_the_tier_name() -> None:
    tiers = label_tiers([RACK, SPINE], ["leaf"])
    built = build(tiers, [node("n0", rack="r0", spine="p0")])

    leaf, spine = built.hyper_nodes

    assert leaf.metadata.labels == {SOURCE_LABEL: SOURCE, RACK: "r0"}
    assert (leaf.spec.tier_name, spine.spec.tier_name) == ("leaf", SPINE)
    assert spine.metadata.labels == {SOURCE_LABEL: SOURCE, SPINE: "p0"}


def test_manifest_is_what_kubectl_applies() -> None:
    (hyper_node,) = build(label_tiers([RACK]), [node("n0", rack="r0")]).hyper_nodes

    assert manifest(hyper_node) == {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "t1-r0", "labels": {SOURCE_LABEL: SOURCE, RACK: "r0"}},
        "spec": {
            "tier": 1,
            "tierName": RACK,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}],
        },
    }
    assert is_own(manifest(hyper_node))
    assert not is_own({"metadata": {"labels": {SOURCE_LABEL: "label"}}})
    assert not is_own({"metadata": {}})


@pytest.mark.parametrize(
    ("tier", "value", "stem", "hashed"),
    [
        (1, "r0", "t1-r0", False),
        (2, "spine-a", "t2-spine-a", False),
        (1, "R0", "t1-r0", True),
        (1, "rack_0", "t1-rack-0", True),
        (1, "a.b", "t1-a-b", True),
        (1, "", "t1-v", True),
    ],
    ids=["plain", "plain-with-dash", "upper-case", "underscore", "dot", "empty"],
)
def test_hyper_node_name(tier: int, value: str, stem: str, hashed: bool) -> None:
    """A value that is a name part as it stands is kept; any other gets a hash after a dot."""
    name = hyper_node_name(tier, value)

    assert name.split(".")[0] == stem
    assert ("." in name) == hashed


@pytest.mark.parametrize(
    ("labels", "names", "error"),
    [
        ([], [], "--label: give at least one"),
        ([RACK, RACK], [], "--label: rack given more than once"),
        ([RACK], ["a", "b"], "--tier-name: 2 names for 1 labels"),
        (["bad key!"], [], "--label: 'bad key!': the name part"),
        (["Bad_Prefix/x"], [], "--label: 'Bad_Prefix/x': the prefix"),
        ([RACK], [""], "--tier-name: '' must be"),
    ],
    ids=["none", "repeated", "too-many-names", "bad-name", "bad-prefix", "empty-tier-name"],
)
def test_label_tiers_refuses(labels: list[str], names: list[str], error: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(error)):
        label_tiers(labels, names)


def test_label_tiers_names_the_rest_by_their_labels() -> None:
    assert label_tiers([RACK, SPINE, ZONE], ["leaf"]) == (
        LabelTier(RACK, "leaf"),
        LabelTier(SPINE, SPINE),
        LabelTier(ZONE, ZONE),
    )


VALUES = st.text(alphabet="aAbB0_.-", max_size=6).filter(
    lambda v: v == "" or (v[0].isalnum() and v[-1].isalnum())
)


@given(st.text(alphabet="abcABC019_.-", max_size=20), st.integers(min_value=1, max_value=9))
def test_names_are_valid_and_distinct_per_value(value: str, tier: int) -> None:
    name = hyper_node_name(tier, value)

    assert re.match(DNS_SUBDOMAIN, name)
    assert name == hyper_node_name(tier, value)
    assert name != hyper_node_name(tier, value + "x")
    assert name != hyper_node_name(tier + 1, value)


@given(
    st.lists(
        st.tuples(st.none() | VALUES, st.none() | VALUES, st.none() | VALUES),
        max_size=12,
    )
)
def test_every_labelled_node_is_in_one_tier_1_hyper_node_and_tiers_nest(
    labels: list[tuple[str | None, str | None, str | None]],
) -> None:
    tiers = label_tiers([RACK, SPINE, ZONE])
    nodes = [labelled(f"n{i}", *values) for i, values in enumerate(labels)]

    built = build(tiers, nodes)

    shape = tree(built.hyper_nodes)
    tier_of = {name: tier for name, (tier, _) in shape.items()}
    for n, (rack, _, _) in zip(nodes, labels, strict=True):
        containing = [
            h for h, (tier, members) in shape.items() if tier == 1 and n.metadata.name in members
        ]
        assert len(containing) == (0 if rack is None else 1)
        assert (n.metadata.name in built.unplaced) == (rack is None)
    for tier, members in shape.values():
        assert members
        if tier > 1:
            assert all(tier_of.get(member) == tier - 1 for member in members)
    if not built.conflicts:
        parents = [m for tier, members in shape.values() if tier > 1 for m in members]
        assert len(parents) == len(set(parents))


def own(name: str, *nodes: str) -> dict[str, Any]:
    """A HyperNode as the API returns one this builder made."""
    stored = make_hyper_node(name).tier(1, RACK).nodes(*nodes).label(SOURCE_LABEL, SOURCE)
    return stored.label(RACK, name.removeprefix("t1-")).build()


WANTED = [manifest(h) for h in build(label_tiers([RACK]), [node("n0", rack="r0")]).hyper_nodes]


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        ([], {"create": ["t1-r0"]}),
        ([own("t1-r0", "n0")], {"unchanged": ["t1-r0"]}),
        ([own("t1-r0", "n0", "n9")], {"update": ["t1-r0"]}),
        ([own("t1-r0", "n0"), own("t1-old", "n9")], {"unchanged": ["t1-r0"], "delete": ["t1-old"]}),
        ([make_hyper_node("t1-r0").nodes("n0").build()], {"foreign": ["t1-r0"]}),
        ([make_hyper_node("mine").nodes("n9").build()], {"create": ["t1-r0"]}),
    ],
    ids=["new", "same", "members-changed", "stale-own", "name-taken", "others-left-alone"],
)
def test_plan(existing: list[dict[str, Any]], expected: dict[str, list[str]]) -> None:
    """Each outcome names the HyperNodes in it (an outcome not given is empty)."""
    todo = plan(WANTED, existing)

    outcomes = {
        "create": todo.create,
        "update": todo.update,
        "unchanged": todo.unchanged,
        "delete": todo.delete,
        "foreign": todo.foreign,
    }
    assert {
        outcome: [item if isinstance(item, str) else item["metadata"]["name"] for item in items]
        for outcome, items in outcomes.items()
        if items
    } == expected
