"""Reclaim in a queue tree: the lowest common ancestor of the two queues decides, and a starved
leaf takes from its closest kin first (its siblings before its cousins)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.engine_settings import Rules
from extender.api.resources import CPU, MEMORY, Resources
from extender.api.scheduling import GANG_GATE
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.gangs.queues import QueueView, account
from extender.preemption import victims
from extender.preemption.plan import Pool, victims_for, wanting
from extender.preemption.victims import Unit, by_kinship, kinship, sides
from tests.builders import (
    QueueBuilder,
    cluster,
    make_group,
    make_node,
    make_pod,
    make_queue,
    running,
    waiting,
)

GI = 2**30

# root -> ml -> {team-a (deserves 4 cpu by its spec), team-b}; root -> web, ml and web weighted
# alike. On 16 cpu, ml and web deserve 8 each: team-b, holding 6, is over the 4 ml leaves it,
# and web, holding 10, over its 8.
TREE = (
    make_queue("ml"),
    make_queue("team-a").parent("ml").deserved(cpu="4"),
    make_queue("team-b").parent("ml"),
    make_queue("web"),
)


def scene(queues: tuple[QueueBuilder, ...], *, need: int, web: str = "web") -> ClusterState:
    """16 cpu full: team-b's three gangs of 2 x 1 cpu, five one-pod gangs of 2 cpu in `web`
    (they cost less: one pod each), and team-a's gang waiting, of `need` members of 1 cpu."""
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(4)])
    for queue in queues:
        state.upsert_queue(queue.model())
    for index, nodes in enumerate((["n0", "n0"], ["n1", "n1"], ["n2", "n2"])):
        running(state, f"b{index}", nodes, cpu="1", queue="team-b")
    for index, node in enumerate(["n3", "n3", "n0", "n1", "n2"]):
        running(state, f"w{index}", [node], cpu="2", queue=web)
    waiting(state, "a0", need, cpu="1", queue="team-a")
    return state


def reclaimed(state: ClusterState) -> Counter[str] | None:
    """Per queue, how many units the preemption pass takes for team-a's gang (None: none)."""
    gangs = Gangs()
    gangs.verdict(state, state.view().nodes, state.pods["uid-default-a0-0"])
    order = gangs.order(state, state.view().nodes)
    assert wanting(order, gangs) == ["default/a0"]
    found = victims_for(state, gangs, order, Pool.of(state, gangs), key="default/a0", rules=Rules())
    return None if found is None else Counter(unit.queue for unit in found.victims)


@pytest.mark.parametrize(
    ("queues", "need", "web", "expected"),
    [
        pytest.param(TREE, 2, "web", {"team-b": 1}, id="the sibling first, though web costs less"),
        pytest.param(
            TREE,
            4,
            "web",
            {"team-b": 1, "web": 1},
            id="the sibling frees too little alone: the cousin too",
        ),
        pytest.param(
            (*TREE[:2], make_queue("team-b").parent("ml").reclaimable(False), TREE[3]),
            2,
            "web",
            {"web": 1},
            id="a sibling not reclaimable: the cousin",
        ),
        pytest.param(
            (make_queue("ml").reclaimable(False), *TREE[1:]),
            2,
            "web",
            {"team-b": 1},
            id="a common ancestor not reclaimable does not shield the sibling",
        ),
        pytest.param(
            (
                *TREE[:2],
                make_queue("team-b").parent("ml").reclaimable(False),
                make_queue("web").reclaimable(False),
                make_queue("web-x").parent("web"),
            ),
            2,
            "web-x",
            None,
            id="a cousin whose parent is not reclaimable is never a victim",
        ),
        pytest.param(
            (
                *TREE[:3],
                make_queue("web").reclaimable(False),
                make_queue("web-x").parent("web"),
            ),
            4,
            "web-x",
            None,
            id="the sibling frees too little and the cousin's parent is not reclaimable",
        ),
        pytest.param(
            (*TREE[:3], make_queue("web"), make_queue("web-x").parent("web")),
            2,
            "web-x",
            {"team-b": 1},
            id="the sibling before a cousin two levels down",
        ),
    ],
)
def test_a_starved_leaf_reclaims_from_its_closest_kin_first(
    queues: tuple[QueueBuilder, ...], need: int, web: str, expected: dict[str, int] | None
) -> None:
    state = scene(queues, need=need, web=web)
    found = reclaimed(state)
    assert (None if found is None else dict(found)) == expected


def test_the_figures_behind_the_scene() -> None:
    """What the table above rests on: team-b and web over their share, team-a and ml below."""
    views = account(scene(TREE, need=2), {})
    over = {name: view.overused for name, view in views.items() if name != "default"}
    assert over == {"ml": False, "team-a": False, "team-b": True, "web": True}
    assert {name: views[name].deserved["cpu"] for name in over} == {
        "ml": 8_000,
        "team-a": 4_000,
        "team-b": 4_000,
        "web": 8_000,
    }


# root -> ml -> {team-a -> {x}, team-b}; root -> web.
KIN = (
    make_queue("ml"),
    make_queue("team-a").parent("ml"),
    make_queue("team-b").parent("ml"),
    make_queue("x").parent("team-a"),
    make_queue("web"),
)


def views_of(*queues: QueueBuilder) -> dict[str, QueueView]:
    state = cluster([make_node("n0")])
    for queue in queues:
        state.upsert_queue(queue.model())
    return account(state, {})


@pytest.mark.parametrize(
    ("own", "other", "mine", "theirs", "kin"),
    [
        pytest.param("team-a", "team-b", ["team-a"], ["team-b"], 1, id="siblings"),
        pytest.param("x", "team-b", ["x", "team-a"], ["team-b"], 1, id="a nephew"),
        pytest.param("x", "web", ["x", "team-a", "ml"], ["web"], 0, id="cousins under root"),
        pytest.param("team-b", "web", ["team-b", "ml"], ["web"], 0, id="a leaf and a top queue"),
        pytest.param("ml", "web", ["ml"], ["web"], 0, id="two top-level queues"),
    ],
)
def test_sides_and_kinship(
    own: str, other: str, mine: list[str], theirs: list[str], kin: int
) -> None:
    views = views_of(*KIN)
    found = sides(views[own], views[other])
    assert ([v.name for v in found[0]], [v.name for v in found[1]]) == (mine, theirs)
    assert kinship(views[own], views[other]) == kin


def _unit(queue: str) -> Unit:
    return Unit(f"default/{queue}-g", queue, 0, (), whole=True)


def test_by_kinship_widens_level_by_level() -> None:
    views = views_of(*KIN)
    units = [_unit("web"), _unit("team-b"), _unit("x")]
    steps = [[unit.queue for unit in step] for step in by_kinship(units, "x", views)]
    # x's own queue, then with its parent's siblings' (kin 1: under ml), then everyone's.
    assert steps == [["team-b", "x"], ["web", "team-b", "x"]]


@pytest.mark.parametrize("own", ["a", "b", "c"])
def test_flat_queues_are_tried_all_at_once(own: str) -> None:
    views = views_of(make_queue("a"), make_queue("b"), make_queue("c"))
    units = [_unit("a"), _unit("b"), _unit("c")]
    assert list(by_kinship(units, own, views)) == [units]


# own and sib under p; c1 and c2 under q; top alone (two levels, each queue's figures drawn).
_TREE_PARENTS = {"p": None, "q": None, "top": None, "own": "p", "sib": "p", "c1": "q", "c2": "q"}
_VICTIM_QUEUES = ("sib", "c1", "c2", "top")


@settings(max_examples=200, deadline=None)
@given(
    figures=st.lists(
        st.tuples(st.integers(0, 40), st.integers(1, 20)), min_size=7, max_size=7
    ),  # per queue: allocated and deserved cpu (and as many Gi of memory)
    drawn=st.lists(
        st.tuples(
            st.sampled_from(_VICTIM_QUEUES),
            st.integers(0, 3),  # which gang of that queue
            st.booleans(),  # whole, or a spare member
            st.integers(1, 8),  # cpu
            st.integers(0, 8),  # memory, Gi
        ),
        max_size=12,
    ),
)
def test_the_greedy_set_grows_valid_exactly_as_the_whole_check_says_in_a_tree(
    figures: list[tuple[int, int]], drawn: list[tuple[str, int, bool, int, int]]
) -> None:
    """As for flat queues: `_Taking` allows a unit exactly when `_valid` allows the set with
    it, each unit charged to every queue on its side below the common ancestor."""
    views: dict[str, QueueView] = {}
    for (name, parent), (allocated, deserved) in zip(_TREE_PARENTS.items(), figures, strict=True):
        views[name] = QueueView(
            make_queue(name).model(),
            allocated=Resources({CPU: allocated * 1000, MEMORY: allocated * GI}),
            deserved=Resources({CPU: deserved * 1000, MEMORY: deserved * GI}),
            parent=None if parent is None else views[parent],
            leaf=name not in _TREE_PARENTS.values(),
        )
    taking = victims._Taking(views, "own")
    chosen: list[Unit] = []
    for index, (queue, gang, whole, cpu, memory) in enumerate(drawn):
        pod = make_pod(f"p{index}").cpu(str(cpu)).memory(f"{memory}Gi").model()
        unit = Unit(f"{queue}/g{gang}", queue, 0, ((pod, "n0"),), whole=whole)
        allowed = victims._valid([*chosen, unit], views, "own")
        assert taking.allows(unit) == allowed
        if allowed:
            taking.add(unit)
            chosen.append(unit)


def test_siblings_reclaim_from_each_other_even_while_their_parent_is_over_its_share() -> None:
    """ml holds 12 of 16 cpu, over its 8 (web waits for 6 more and deserves 8): ml's children
    settle between them what ml holds. team-a, below its 4, takes from team-b, over the 4 left
    to it; web, below its share, is taken nothing from."""
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(4)])
    for queue in TREE:
        state.upsert_queue(queue.model())
    for index in range(6):
        node = f"n{index // 2}"
        running(state, f"b{index}", [node, node], cpu="1", queue="team-b")
    running(state, "w0", ["n3"], cpu="2", queue="web")
    waiting(state, "w1", 3, cpu="2", queue="web")
    state.upsert_pod(make_pod("outside").cpu("2").on("n3").phase("Running").model())
    waiting(state, "a0", 2, cpu="1", queue="team-a")
    views = account(state, {})
    assert views["ml"].overused and views["team-b"].overused
    assert not views["team-a"].overused and not views["web"].overused
    found = reclaimed(state)
    assert found is not None and dict(found) == {"team-b": 1}


def test_a_gang_held_by_lahars_gate_in_a_full_cluster_reclaims_too() -> None:
    """Its pods wait behind Lahar's gate, so the scheduler never asks about them, and a walk
    that finds nothing fits records no refusal for it: it must still be a preemptor."""
    state = scene(TREE, need=2)
    for index in range(2):
        state.delete_pod(f"uid-default-a0-{index}")
        held = make_pod(f"a0-{index}").uid(f"a0-{index}").cpu("1").group("a0")
        state.upsert_pod(held.scheduler("lahar").gated(GANG_GATE).model())
    state.upsert_pod_group(make_group("a0").queue("team-a").min_member(2).model())
    gangs = Gangs(schedulers={"lahar"})
    assert gangs.let_in(state, state.view().nodes) == []
    assert gangs.refusal("default/a0") is None  # (nothing fit: the walk recorded nothing)
    order = gangs.order(state, state.view().nodes)
    assert wanting(order, gangs) == ["default/a0"]
    found = victims_for(state, gangs, order, Pool.of(state, gangs), key="default/a0", rules=Rules())
    assert found is not None
    assert Counter(unit.queue for unit in found.victims) == {"team-b": 1}


def test_a_leaf_never_reclaims_from_a_queue_above_it() -> None:
    """Work left in a queue that became a parent (admitted before its children existed) is not
    its child's to reclaim, whatever the parent's reclaimable flag and share."""
    views = views_of(
        make_queue("ml").reclaimable(False), make_queue("team-a").parent("ml"), make_queue("web")
    )
    units = [_unit("ml"), _unit("web")]
    allowed = victims.sift(units, "team-a", 0, views, Rules())[0]
    assert "ml" not in {unit.queue for unit in allowed}
