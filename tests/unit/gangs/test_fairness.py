"""Water-filling deserved shares, queue share and DRF share: exact tables and properties."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from extender.api.resources import Resources
from extender.api.scheduling import ROOT
from extender.gangs.fairness import (
    Claim,
    dominant_share,
    overused,
    share,
    water_fill,
    water_fill_tree,
)

CLUSTER = Resources({"cpu": 12_000, "memory": 48, "pods": 300})


def cpu(millis: int) -> Resources:
    return Resources({"cpu": millis})


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        pytest.param(
            [Claim("a", 1, cpu(100_000)), Claim("b", 3, cpu(100_000))],
            {"a": 3_000, "b": 9_000},
            id="weights 1:3, both asking for more than the cluster",
        ),
        pytest.param(
            [Claim("a", 1, cpu(1_000)), Claim("b", 3, cpu(100_000))],
            {"a": 1_000, "b": 11_000},
            id="a queue asking little leaves the rest to the other",
        ),
        pytest.param(
            [Claim("a", 1, cpu(100_000), capability=cpu(2_000)), Claim("b", 1, cpu(100_000))],
            {"a": 2_000, "b": 10_000},
            id="capability caps, the rest flows on",
        ),
        pytest.param(
            [Claim("a", 1, cpu(100_000), guarantee=cpu(8_000)), Claim("b", 3, cpu(100_000))],
            {"a": 8_000, "b": 4_000},
            id="guarantee floors a queue above its weighted share",
        ),
        pytest.param(
            [
                Claim("a", 1, cpu(0), guarantee=cpu(10_000)),
                Claim("b", 1, cpu(0), guarantee=cpu(14_000)),
            ],
            {"a": 5_000, "b": 7_000},
            id="guarantees beyond the cluster shrink in proportion",
        ),
        pytest.param(
            [Claim("a", 5, cpu(100_000), deserved=cpu(1_000)), Claim("b", 1, cpu(100_000))],
            {"a": 1_000, "b": 11_000},
            id="deserved from the spec is taken as is",
        ),
        pytest.param(
            [Claim("a", 1, cpu(0)), Claim("b", 1, cpu(0))],
            {"a": 0, "b": 0},
            id="nobody asks, nobody deserves",
        ),
    ],
)
def test_water_fill(claims: list[Claim], expected: dict[str, int]) -> None:
    deserved = water_fill(claims, CLUSTER)
    assert {name: amounts["cpu"] for name, amounts in deserved.items()} == pytest.approx(
        expected, abs=2
    )
    assert all("pods" not in amounts for amounts in deserved.values())


amounts = st.integers(min_value=0, max_value=50_000)
claims = st.lists(
    st.builds(
        Claim,
        name=st.uuids().map(str),
        weight=st.integers(min_value=1, max_value=65_535),
        request=st.builds(cpu, amounts),
        capability=st.one_of(st.just(Resources()), st.builds(cpu, amounts)),
        guarantee=st.one_of(st.just(Resources()), st.builds(cpu, amounts)),
    ),
    max_size=8,
    unique_by=lambda claim: claim.name,
)


@given(claims, amounts)
def test_deserved_never_exceeds_capability_nor_the_cluster_in_total(
    queues: list[Claim], total: int
) -> None:
    deserved = water_fill(queues, cpu(total))
    assert sum(d["cpu"] for d in deserved.values()) <= total
    for claim in queues:
        if "cpu" in claim.capability:
            assert deserved[claim.name]["cpu"] <= claim.capability["cpu"]
        assert deserved[claim.name]["cpu"] >= 0


@given(claims, amounts)
def test_water_fill_is_work_conserving(queues: list[Claim], total: int) -> None:
    """What is not handed out is what nobody could take (every queue at its ceiling)."""
    deserved = water_fill(queues, cpu(total))
    handed = sum(d["cpu"] for d in deserved.values())
    ceilings = sum(
        max(c.request["cpu"], c.guarantee["cpu"])
        if "cpu" not in c.capability
        else min(c.capability["cpu"], max(c.request["cpu"], c.guarantee["cpu"]))
        for c in queues
    )
    assert handed >= min(total, ceilings) - len(queues)  # integer rounding: 1 unit a queue


@pytest.mark.parametrize(
    ("allocated", "deserved", "expected", "over"),
    [
        (cpu(3_000), cpu(6_000), 0.5, False),
        (cpu(6_000), cpu(6_000), 1.0, False),
        (
            Resources({"cpu": 3_000, "memory": 30}),
            Resources({"cpu": 6_000, "memory": 20}),
            1.5,
            True,
        ),
        (Resources({"nvidia.com/gpu": 1}), cpu(6_000), 1.0, True),  # holds what it deserves none of
        (Resources({"pods": 10}), cpu(1), 0.0, False),  # the pod count is not shared
    ],
)
def test_queue_share(
    allocated: Resources, deserved: Resources, expected: float, over: bool
) -> None:
    assert share(allocated, deserved) == expected
    assert overused(allocated, deserved) is over


def test_dominant_share_is_the_largest_fraction_of_any_resource() -> None:
    allocated = Resources({"cpu": 1_200, "memory": 24, "pods": 290})
    assert dominant_share(allocated, CLUSTER) == 0.5


def test_water_fill_ends_at_terabytes_of_memory() -> None:
    """At this scale floats are coarser than the bisection's 1/1000 of a byte: the fill used to
    loop for ever (the extender's event loop with it). Found by `lahar simulate` on 100 nodes of
    128Gi with more demand than the cluster holds."""
    total = Resources({"cpu": 3_200_000, "memory": 100 * 128 * 2**30})
    claims = [
        Claim(name, weight, Resources({"cpu": 5_000_000, "memory": 200 * 128 * 2**30}))
        for name, weight in (("a", 3), ("b", 2), ("c", 1))
    ]
    deserved = water_fill(claims, total)
    assert sum(d["memory"] for d in deserved.values()) <= total["memory"]
    assert deserved["a"]["memory"] > deserved["b"]["memory"] > deserved["c"]["memory"]
    assert total["memory"] - sum(d["memory"] for d in deserved.values()) < 10


# A queue tree: each parent's deserved is shared among its children (`water_fill_tree`).

TREE_TOTAL = cpu(12_000)
MUCH = cpu(100_000)  # more than the cluster: a queue that would take everything


def fill_tree(
    queues: dict[str, tuple[str, Claim]], total: Resources = TREE_TOTAL
) -> dict[str, int]:
    """The cpu each queue deserves; `queues` is per name (its parent, its claim)."""
    children: dict[str, list[str]] = {}
    for name, (parent, _) in queues.items():
        children.setdefault(parent, []).append(name)
    claims = {name: claim for name, (_, claim) in queues.items()}
    deserved = water_fill_tree(claims, children, ROOT, total)
    return {name: amounts["cpu"] for name, amounts in deserved.items()}


def tree_of(*queues: tuple[str, str, Claim]) -> dict[str, tuple[str, Claim]]:
    return {name: (parent, claim) for name, parent, claim in queues}


@pytest.mark.parametrize(
    ("queues", "expected"),
    [
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 3)),
                ("a", "ml", Claim("a", 1, MUCH)),
                ("b", "ml", Claim("b", 1, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 9_000, "web": 3_000, "a": 4_500, "b": 4_500},
            id="two levels: 3:1 at the top, 1:1 within ml",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("a", "ml", Claim("a", 1, MUCH)),
                ("b", "ml", Claim("b", 3, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 6_000, "web": 6_000, "a": 1_500, "b": 4_500},
            id="children weighted 1:3 share their parent's half",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("a", "ml", Claim("a", 1, MUCH, capability=cpu(1_000))),
                ("b", "ml", Claim("b", 1, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 6_000, "web": 6_000, "a": 1_000, "b": 5_000},
            id="a capped child: the rest of its parent's share flows to its sibling",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("a", "ml", Claim("a", 1, MUCH, capability=cpu(1_000))),
                ("b", "ml", Claim("b", 1, MUCH, capability=cpu(2_000))),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 3_000, "web": 9_000, "a": 1_000, "b": 2_000},
            id="children capped below their parent's share: the rest flows to its sibling",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1, capability=cpu(3_000))),
                ("a", "ml", Claim("a", 1, MUCH)),
                ("b", "ml", Claim("b", 1, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 3_000, "web": 9_000, "a": 1_500, "b": 1_500},
            id="a capped parent: its children share its capability",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("a", "ml", Claim("a", 1, MUCH, guarantee=cpu(5_000))),
                ("b", "ml", Claim("b", 1, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 6_000, "web": 6_000, "a": 5_000, "b": 1_000},
            id="a guaranteed child gets its guarantee out of its parent's share",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("a", "ml", Claim("a", 1, MUCH, guarantee=cpu(9_000))),
                ("b", "ml", Claim("b", 1, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 9_000, "web": 3_000, "a": 9_000, "b": 0},
            id="a child's guarantee is its parent's too, above its weighted share",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 5, deserved=cpu(2_000))),
                ("a", "ml", Claim("a", 1, MUCH)),
                ("b", "ml", Claim("b", 1, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 2_000, "web": 10_000, "a": 1_000, "b": 1_000},
            id="a parent's spec.deserved is what its children share",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("a", "ml", Claim("a", 1, cpu(1_000))),
                ("b", "ml", Claim("b", 1, cpu(500))),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 1_500, "web": 10_500, "a": 1_000, "b": 500},
            id="a parent asks for what its children ask: the rest goes to the other branch",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("t", "ml", Claim("t", 1)),
                ("x", "t", Claim("x", 1, MUCH)),
                ("y", "t", Claim("y", 3, MUCH)),
                ("b", "ml", Claim("b", 1, MUCH)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 6_000, "web": 6_000, "t": 3_000, "b": 3_000, "x": 750, "y": 2_250},
            id="three levels",
        ),
        pytest.param(
            tree_of(
                ("ml", ROOT, Claim("ml", 1)),
                ("a", "ml", Claim("a", 1)),
                ("web", ROOT, Claim("web", 1, MUCH)),
            ),
            {"ml": 0, "web": 12_000, "a": 0},
            id="a branch nobody asks for deserves nothing",
        ),
    ],
)
def test_water_fill_tree(queues: dict[str, tuple[str, Claim]], expected: dict[str, int]) -> None:
    assert fill_tree(queues) == pytest.approx(expected, abs=2)


@st.composite
def trees(draw: st.DrawFn) -> tuple[dict[str, tuple[str, Claim]], int]:
    """A random tree of up to 7 queues, at most 3 levels deep, and a cluster's cpu. Queues with
    children ask for nothing themselves (gangs go in leaf queues)."""
    depth = {ROOT: 0}
    parents: dict[str, str] = {}
    for index in range(draw(st.integers(1, 7))):
        name = f"q{index}"
        parents[name] = draw(st.sampled_from([q for q, d in depth.items() if d < 3]))
        depth[name] = depth[parents[name]] + 1
    has_children = set(parents.values())
    optional = st.one_of(st.none(), st.integers(1, 6_000))
    queues = {}
    for name, parent in parents.items():
        cap, guarantee = draw(optional), draw(optional)
        request = 0 if name in has_children else draw(st.integers(0, 8_000))
        claim = Claim(
            name,
            draw(st.integers(1, 5)),
            cpu(request),
            cpu(cap) if cap is not None else Resources(),
            cpu(guarantee) if guarantee is not None else Resources(),
        )
        queues[name] = (parent, claim)
    return queues, draw(st.integers(0, 12_000))


def _children(queues: dict[str, tuple[str, Claim]]) -> dict[str, list[str]]:
    children: dict[str, list[str]] = {ROOT: []}
    for name, (parent, _) in queues.items():
        children.setdefault(parent, []).append(name)
    return children


def _capped(claim: Claim, amount: int) -> int:
    return min(amount, claim.capability["cpu"]) if "cpu" in claim.capability else amount


def _usable(queues: dict[str, tuple[str, Claim]], name: str) -> int:
    """What a queue's subtree could take: its request (a parent: what its children could take),
    at least its guarantee, within its capability."""
    children = _children(queues)
    claim = queues[name][1]
    if name in children:
        asked = sum(_usable(queues, child) for child in children[name])
    else:
        asked = claim.request["cpu"]
    return _capped(claim, max(asked, _guaranteed(queues, name)))


def _guaranteed(queues: dict[str, tuple[str, Claim]], name: str) -> int:
    """A queue's guarantee, at least the sum of its children's."""
    below = sum(_guaranteed(queues, child) for child in _children(queues).get(name, []))
    return max(queues[name][1].guarantee["cpu"], below)


@settings(max_examples=300, deadline=None)
@given(trees())
def test_water_fill_tree_shares_each_parent_among_its_children(
    drawn: tuple[dict[str, tuple[str, Claim]], int],
) -> None:
    queues, total = drawn
    deserved = fill_tree(queues, cpu(total))
    assert set(deserved) == set(queues)
    children = _children(queues)
    for parent, names in children.items():
        got = sum(deserved[name] for name in names)
        parent_has = total if parent == ROOT else deserved[parent]
        # (a) children never share more than their parent deserves
        assert got <= parent_has, (parent, got, parent_has)
        # (b) a saturated parent is shared whole (integer rounding: a unit per child)
        if sum(_usable(queues, name) for name in names) >= parent_has:
            assert got >= parent_has - len(names), (parent, got, parent_has)
    for name, (_, claim) in queues.items():
        # (c) never above its capability
        assert deserved[name] >= 0
        assert deserved[name] == _capped(claim, deserved[name])


@settings(max_examples=300, deadline=None)
@given(trees())
def test_water_fill_tree_keeps_the_guarantees_that_fit(
    drawn: tuple[dict[str, tuple[str, Claim]], int],
) -> None:
    """(d) Where at every level the children's guarantees (within their capabilities) fit in
    what their parent is sure to get, each queue gets at least its guarantee, within its
    capability."""
    queues, total = drawn
    children = _children(queues)

    def floor(name: str) -> int:
        return _capped(queues[name][1], _guaranteed(queues, name))

    fits = all(
        sum(floor(child) for child in names) <= (total if parent == ROOT else floor(parent))
        for parent, names in children.items()
    )
    assume(fits)
    deserved = fill_tree(queues, cpu(total))
    for name, (_, claim) in queues.items():
        assert deserved[name] >= _capped(claim, claim.guarantee["cpu"]), name


@given(claims, amounts)
def test_a_flat_tree_is_shared_exactly_as_flat_queues_are(queues: list[Claim], total: int) -> None:
    """(e) Every queue under root: the same fill as `water_fill`."""
    children = {ROOT: [claim.name for claim in queues]}
    tree = water_fill_tree({claim.name: claim for claim in queues}, children, ROOT, cpu(total))
    assert tree == water_fill(queues, cpu(total))
