"""The queue tree read from `spec.parent`: parents, children, leaves, paths, depths, where two
queues part, and the queues that hang under root for want of a valid parent; and the queues as
`account` sees them in a tree."""

from __future__ import annotations

import pytest

from extender.api.resources import CPU
from extender.api.scheduling import ROOT, Queue
from extender.gangs.queue_tree import QueueTree
from extender.gangs.queues import account
from tests.builders import cluster, make_node, make_queue, running, waiting


def tree(*edges: tuple[str, str]) -> QueueTree:
    """A tree of the queues named, each (name, parent); parent "" names none."""
    queues: dict[str, Queue] = {}
    for name, parent in edges:
        builder = make_queue(name)
        queues[name] = (builder.parent(parent) if parent else builder).model()
    return QueueTree.of(queues)


# root -> ml -> {team-a -> {x}, team-b}; root -> web (naming root as its parent).
THREE_LEVELS = (("ml", ""), ("team-a", "ml"), ("team-b", "ml"), ("x", "team-a"), ("web", ROOT))


def test_parents_and_children_of_a_three_level_tree() -> None:
    found = tree(*THREE_LEVELS)
    assert dict(found.parents) == {
        "ml": ROOT,
        "team-a": "ml",
        "team-b": "ml",
        "x": "team-a",
        "web": ROOT,
    }
    assert dict(found.children) == {
        ROOT: ("ml", "web"),
        "ml": ("team-a", "team-b"),
        "team-a": ("x",),
    }
    assert not found.flat and dict(found.strays) == {}


@pytest.mark.parametrize(
    ("name", "leaf", "path", "depth", "ancestors"),
    [
        (ROOT, False, "root", 0, ()),
        ("ml", False, "root/ml", 1, ()),
        ("team-a", False, "root/ml/team-a", 2, ("ml",)),
        ("team-b", True, "root/ml/team-b", 2, ("ml",)),
        ("x", True, "root/ml/team-a/x", 3, ("team-a", "ml")),
        ("web", True, "root/web", 1, ()),
    ],
)
def test_each_queue_s_place_in_the_tree(
    name: str, leaf: bool, path: str, depth: int, ancestors: tuple[str, ...]
) -> None:
    found = tree(*THREE_LEVELS)
    assert found.is_leaf(name) is leaf
    assert found.path(name) == path
    assert found.depth(name) == depth
    assert found.ancestors(name) == ancestors
    if name != ROOT:
        assert found.chain(name) == (*reversed(ancestors), name)


@pytest.mark.parametrize(
    ("one", "other", "expected"),
    [
        pytest.param("team-b", "team-a", ("team-b", "team-a", 1), id="siblings part below ml"),
        pytest.param("x", "team-b", ("team-a", "team-b", 1), id="cousins within ml"),
        pytest.param("x", "web", ("ml", "web", 0), id="branches that part at root"),
        pytest.param("team-b", "web", ("ml", "web", 0), id="a leaf and a top-level queue"),
        pytest.param("team-a", "x", ("team-a", "x", 2), id="a queue and one below it"),
        pytest.param("ml", "web", ("ml", "web", 0), id="two top-level queues"),
    ],
)
def test_where_two_queues_part(one: str, other: str, expected: tuple[str, str, int]) -> None:
    found = tree(*THREE_LEVELS)
    assert found.branches(one, other) == expected
    mine, theirs, depth = expected
    assert found.branches(other, one) == (theirs, mine, depth)  # the same place, seen back


@pytest.mark.parametrize(
    ("top", "below", "leaves"),
    [
        (ROOT, ["ml", "team-a", "x", "team-b", "web"], ["x", "team-b", "web"]),
        ("ml", ["team-a", "x", "team-b"], ["x", "team-b"]),
        ("team-a", ["x"], ["x"]),
        ("web", [], []),
    ],
)
def test_the_queues_below_one_come_parents_first(
    top: str, below: list[str], leaves: list[str]
) -> None:
    found = tree(*THREE_LEVELS)
    assert list(found.below(top)) == below
    assert found.leaves_under(top) == leaves


@pytest.mark.parametrize(
    ("edges", "strays", "parents"),
    [
        pytest.param(
            (("a", "gone"), ("b", "a")),
            {"a": "its parent queue gone does not exist"},
            {"a": ROOT, "b": "a"},
            id="a missing parent: under root, its children stay under it",
        ),
        pytest.param(
            (("l1", "l2"), ("l2", "l1"), ("l3", "l1")),
            {
                "l1": "its parents form a loop: l1 -> l2 -> l1",
                "l2": "its parents form a loop: l1 -> l2 -> l1",
            },
            {"l1": ROOT, "l2": ROOT, "l3": "l1"},
            id="a loop: each queue on it under root, one hanging from it stays",
        ),
        pytest.param(
            (("me", "me"),),
            {"me": "its parents form a loop: me -> me"},
            {"me": ROOT},
            id="its own parent",
        ),
        pytest.param(
            (("a", ""), ("b", ROOT)),
            {},
            {"a": ROOT, "b": ROOT},
            id="no parent and root as parent alike",
        ),
    ],
)
def test_queues_without_a_valid_parent_hang_under_root(
    edges: tuple[tuple[str, str], ...], strays: dict[str, str], parents: dict[str, str]
) -> None:
    found = tree(*edges)
    assert dict(found.strays) == strays
    assert dict(found.parents) == parents
    for name in parents:  # every queue is reachable from root, once
        assert list(found.below(ROOT)).count(name) == 1


@pytest.mark.parametrize(
    ("edges", "flat"),
    [
        pytest.param((("a", ""), ("b", "")), True, id="no parents"),
        pytest.param(((ROOT, ""), ("a", ROOT), ("b", "")), True, id="a root Queue above them"),
        pytest.param((("a", "gone"), ("b", "")), True, id="a stray hangs under root"),
        pytest.param((("a", ""), ("b", "a")), False, id="one child queue"),
        pytest.param((), True, id="no queues"),
    ],
)
def test_a_tree_without_hierarchy_is_flat(edges: tuple[tuple[str, str], ...], flat: bool) -> None:
    found = tree(*edges)
    assert found.flat is flat
    assert ROOT not in found.parents  # a root Queue is the top, not a queue under it
    if flat:
        assert all(found.is_leaf(name) for name in found.parents)


def test_account_rolls_each_parent_up_from_its_children() -> None:
    """On 16 cpu: team-a runs 2 and waits for 4 more, team-b runs 4, web runs 2 and waits for
    2; a parent holds, has placed and asks for its children's sums, and every view knows its
    place."""
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(4)])
    for queue in (
        make_queue("ml"),
        make_queue("team-a").parent("ml"),
        make_queue("team-b").parent("ml"),
        make_queue("web"),
    ):
        state.upsert_queue(queue.model())
    running(state, "a-run", ["n0"], queue="team-a")
    waiting(state, "a-wait", 2, queue="team-a")
    running(state, "b-run", ["n1", "n1"], queue="team-b")
    running(state, "w-run", ["n2"], queue="web")
    waiting(state, "w-wait", 1, queue="web")
    views = account(state, {})
    figures = {
        name: (v.allocated["cpu"], v.placed["cpu"], v.request["cpu"], v.path, v.leaf)
        for name, v in views.items()
        if name != "default"
    }
    assert figures == {
        "ml": (6_000, 6_000, 10_000, "root/ml", False),
        "team-a": (2_000, 2_000, 6_000, "root/ml/team-a", True),
        "team-b": (4_000, 4_000, 4_000, "root/ml/team-b", True),
        "web": (2_000, 2_000, 4_000, "root/web", True),
    }
    assert views["team-a"].parent is views["ml"] and views["ml"].parent is None
    assert [v.name for v in views["team-a"].lineage()] == ["team-a", "ml"]
    # ml asks 10 and web 4 of 16: both get what they ask; ml's 10 shared 6 and 4.
    assert {name: views[name].deserved["cpu"] for name in figures} == {
        "ml": 10_000,
        "team-a": 6_000,
        "team-b": 4_000,
        "web": 4_000,
    }


@pytest.mark.parametrize("root_queue", [False, True])
def test_flat_queues_are_accounted_alike_with_a_root_queue_or_without(root_queue: bool) -> None:
    """Volcano creates a `root` Queue; queues naming it, or none, share the cluster as flat
    queues do, and the root Queue holds everything and deserves the cluster."""
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(3)])
    queues = [make_queue("a").weight(1), make_queue("b").weight(3).parent(ROOT)]
    for queue in [*queues, *([make_queue(ROOT)] if root_queue else [])]:
        state.upsert_queue(queue.model())
    running(state, "a-run", ["n0", "n0"], queue="a")
    waiting(state, "a-wait", 4, queue="a")
    waiting(state, "b-wait", 6, queue="b")
    views = account(state, {})
    figures = {
        name: (views[name].deserved["cpu"], views[name].path, views[name].leaf)
        for name in ("a", "b")
    }
    assert figures == {"a": (3_000, "root/a", True), "b": (9_000, "root/b", True)}
    assert (ROOT in views) is root_queue
    if root_queue:
        root = views[ROOT]
        assert (root.allocated["cpu"], root.deserved["cpu"], root.leaf) == (4_000, 12_000, False)
        assert [v.name for v in views["a"].lineage()] == ["a"]  # the root Queue left out


def test_gangs_waiting_in_a_queue_with_children_ask_for_nothing() -> None:
    """They are never admitted there (gangs go in leaf queues), so the parent's claim on the
    cluster is its children's, not theirs."""
    state = cluster([make_node("n0").cpu("8")])
    for queue in (make_queue("ml"), make_queue("team-a").parent("ml"), make_queue("web")):
        state.upsert_queue(queue.model())
    waiting(state, "stuck", 2, cpu="2", queue="ml")
    waiting(state, "wanted", 1, cpu="1", queue="team-a")
    views = account(state, {})
    assert views["ml"].request[CPU] == 1000
    assert views["ml"].deserved[CPU] == 1000
