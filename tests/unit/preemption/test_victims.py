"""Victim choice: whole gangs or spare members only, eligible by priority and queue, fewest."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from extender.api.engine_settings import Rules
from extender.api.objects import ObjectMeta, PriorityClass
from extender.api.resources import CPU, MEMORY, Resources
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.gangs.members import view_gang
from extender.gangs.placement import Room
from extender.gangs.queues import QueueView, account
from extender.preemption import plan as preemption
from extender.preemption import victims
from extender.preemption.plan import Pool, victims_for, wanting
from extender.preemption.victims import Unit, choose, sift
from tests.builders import cluster, make_node, make_pod, make_queue, running, waiting

BOTH = Rules()


def candidates(state: ClusterState, preemptor: str, rules: Rules = BOTH) -> list[Unit]:
    """The units the waiting gang `preemptor` may take, cheapest first (the preemption pass's
    own gathering)."""
    queues = account(state, {})
    gang = view_gang(state, f"default/{preemptor}")
    units = [unit for unit in Pool.of(state, Gangs()).units if unit.key != gang.key]
    priority = max(p.spec.priority for p in gang.pending)
    return sift(units, gang.queue, priority, queues, rules)[0]


def decide(state: ClusterState, preemptor: str, rules: Rules = BOTH) -> list[str] | None:
    nodes = state.view().nodes
    queues = account(state, {})
    gang = view_gang(state, f"default/{preemptor}")
    allowed = candidates(state, preemptor, rules)
    chosen = choose(gang.pending, allowed, nodes, {}, queues=queues, preemptor_queue=gang.queue)
    if chosen is None:
        return None
    return sorted(
        u.key.split("/")[1] + ("" if u.whole else ":" + u.pods[0][0].metadata.name) for u in chosen
    )


def test_victims_being_evicted_are_neither_taken_again_nor_replaced() -> None:
    state = four_nodes()
    running(state, "a", ["n0", "n0"], priority=1)
    running(state, "b", ["n1", "n1"], priority=1)
    running(state, "c", ["n2", "n2", "n3", "n3"], priority=1)
    waiting(state, "u", 2, cpu="2", priority=9)
    gangs = Gangs()
    gangs.verdict(state, state.view().nodes, state.pods["uid-default-u-0"])
    order = gangs.order(state, state.view().nodes)
    assert wanting(order, gangs) == ["default/u"]
    first = victims_for(state, gangs, order, Pool.of(state, gangs), key="default/u", rules=BOTH)
    assert first is not None and [unit.key for unit in first.victims] == ["default/a"]
    for pod in ("a-0", "a-1"):  # the eviction went through: a's pods terminate
        evicted = state.pods[f"uid-default-{pod}"]
        meta = evicted.metadata.model_copy(update={"deletion_timestamp": "2026-11-23T00:00:00Z"})
        state.upsert_pod(evicted.model_copy(update={"metadata": meta}))
    pool = Pool.of(state, gangs)
    assert "default/a" not in {unit.key for unit in pool.units}
    assert victims_for(state, gangs, order, pool, key="default/u", rules=BOTH) is None


def test_a_gang_whose_bindings_are_being_made_is_not_a_victim() -> None:
    """Members waiting at the bind barrier count on their nodes (assumed) but are not bound yet:
    evicting them would race their bindings, so the gang is not taken until it runs."""
    state = four_nodes()
    running(state, "binding", ["n0", "n0"], priority=1)
    waiting(state, "u", 2, cpu="2", priority=9)
    for index in range(2):
        pod = state.pods[f"uid-default-binding-{index}"]
        spec = pod.spec.model_copy(update={"node_name": ""})
        state.upsert_pod(pod.model_copy(update={"spec": spec}))
        state.assume(state.pods[f"uid-default-binding-{index}"], "n0")
    assert "default/binding" not in {unit.key for unit in Pool.of(state, Gangs()).units}
    state.upsert_pod(pod)  # one of them bound: still not a victim while the other waits
    assert "default/binding" not in {unit.key for unit in Pool.of(state, Gangs()).units}


def four_nodes() -> ClusterState:
    return cluster([make_node(f"n{i}").cpu("4") for i in range(4)])


def test_the_fewest_pods_go_whole_gangs_of_lower_priority_only() -> None:
    state = four_nodes()
    running(state, "big-low", ["n0", "n0", "n1", "n1"], priority=1)  # 4 pods, 8 cpu
    running(state, "small-low", ["n2", "n2"], priority=1)  # 2 pods fill n2
    running(state, "same", ["n3", "n3"], priority=50)  # as high as the preemptor: never
    waiting(state, "urgent", 2, priority=50)
    assert decide(state, "urgent") == ["small-low"]


def test_spare_members_beyond_min_member_go_before_a_whole_gang() -> None:
    state = four_nodes()
    running(state, "elastic", ["n0", "n0", "n1", "n1", "n2", "n2", "n3", "n3"], min_member=4)
    waiting(state, "urgent", 2, priority=10)
    chosen = decide(state, "urgent")
    assert chosen is not None and len(chosen) == 2 and all(c.startswith("elastic:") for c in chosen)


def test_nothing_to_take_is_refused_not_guessed() -> None:
    state = four_nodes()
    running(state, "peer", ["n0", "n0", "n1", "n1", "n2", "n2", "n3", "n3"], priority=10)
    waiting(state, "urgent", 2, priority=10)
    assert decide(state, "urgent") is None


def test_reclaim_takes_from_an_overused_reclaimable_queue_only() -> None:
    state = four_nodes()
    for queue in (make_queue("a"), make_queue("b"), make_queue("keep").reclaimable(False)):
        state.upsert_queue(queue.model())
    running(state, "b1", ["n0", "n0"], queue="b")
    running(state, "b2", ["n1", "n1"], queue="b")
    running(state, "b3", ["n2", "n2"], queue="b")
    running(state, "k1", ["n3", "n3"], queue="keep")
    waiting(state, "a1", 2, queue="a")
    chosen = decide(state, "a1")
    assert chosen is not None and len(chosen) == 1 and chosen[0].startswith("b")
    assert decide(state, "a1", Rules(reclaim=False)) is None


@st.composite
def scenes(draw: st.DrawFn) -> ClusterState:
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(3)])
    free = {f"n{i}": 4 for i in range(3)}
    for g in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 3))
        spots = [n for n, left in free.items() for _ in range(left // 1)]
        nodes = (
            draw(st.lists(st.sampled_from(spots), min_size=size, max_size=size)) if spots else []
        )
        if len(nodes) < size or any(nodes.count(n) > free[n] for n in nodes):
            continue
        for n in nodes:
            free[n] -= 1
        running(
            state,
            f"r{g}",
            nodes,
            cpu="1",
            priority=draw(st.integers(0, 3)),
            min_member=draw(st.integers(1, size)),
        )
    waiting(state, "p", draw(st.integers(1, 3)), cpu=draw(st.sampled_from(["1", "2"])), priority=5)
    return state


@settings(max_examples=60, deadline=None)
@given(scenes())
def test_victims_let_the_gang_fit_are_irreducible_and_cheapest(state: ClusterState) -> None:
    nodes = state.view().nodes
    queues = account(state, {})
    gang = view_gang(state, "default/p")
    allowed = candidates(state, "p")
    chosen = choose(gang.pending, allowed, nodes, {}, queues=queues, preemptor_queue=gang.queue)
    if victims._fits(gang.pending, [], Room(nodes)):
        return  # it fits as it is: nobody to evict
    wholes = [u for u in allowed if u.whole]
    if chosen is None:
        assert not allowed or not victims._fits(gang.pending, wholes, Room(nodes))
        return
    assert victims._fits(gang.pending, chosen, Room(nodes))
    for unit in chosen:  # irreducible: none of them can be spared
        rest = [u for u in chosen if u is not unit]
        assert not (
            rest
            and victims._valid(rest, queues, gang.queue)
            and victims._fits(gang.pending, rest, Room(nodes))
        )
    best = min(
        (
            victims._cost(combo)
            for size in range(1, len(allowed) + 1)
            for combo in itertools.combinations(allowed, size)
            if victims._valid(combo, queues, gang.queue)
            and victims._fits(gang.pending, combo, Room(nodes))
        ),
        default=None,
    )
    assert best is not None and victims._cost(chosen) == best


def test_a_gang_alike_one_that_found_no_victims_in_the_pass_is_not_searched_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same members' shape, queue and priority, on the same rooms and queue figures: the same
    search, the same nothing. A gang of another shape, or a new pass, searches."""
    state = four_nodes()
    for index in range(4):
        running(state, f"high{index}", [f"n{index}", f"n{index}"], priority=9)
    waiting(state, "u", 2, cpu="2", priority=5)
    waiting(state, "v", 2, cpu="2", priority=5)
    waiting(state, "w", 1, cpu="3", priority=5)
    gangs = Gangs()
    for gang in ("u", "v", "w"):
        gangs.verdict(state, state.view().nodes, state.pods[f"uid-default-{gang}-0"])
    order = gangs.order(state, state.view().nodes)
    searches: list[int] = []
    search = preemption.choose

    def counted(*args: Any, **kwargs: Any) -> Any:
        searches.append(1)
        return search(*args, **kwargs)

    monkeypatch.setattr(preemption, "choose", counted)
    pool = Pool.of(state, gangs)
    for key in ("default/u", "default/v", "default/w"):
        assert victims_for(state, gangs, order, pool, key=key, rules=BOTH) is None
    assert len(searches) == 2  # u's search answers for v; w's shape differs
    pool = Pool.of(state, gangs)
    assert victims_for(state, gangs, order, pool, key="default/v", rules=BOTH) is None
    assert len(searches) == 3


def test_a_running_gangs_units_are_kept_with_its_view_while_its_priority_holds() -> None:
    state = four_nodes()
    running(state, "r", ["n0", "n0"], priority=1)
    group = state.pod_groups["default/r"]
    spec = group.spec.model_copy(update={"priority_class_name": "batch"})
    state.upsert_pod_group(group.model_copy(update={"spec": spec}))
    state.upsert_priority_class(PriorityClass(metadata=ObjectMeta(name="batch"), value=3))
    first = Pool.of(state, Gangs()).units
    assert {unit.priority for unit in first} == {3}
    assert Pool.of(state, Gangs()).units[0] is first[0]  # nothing changed: the same units
    state.upsert_priority_class(PriorityClass(metadata=ObjectMeta(name="batch"), value=7))
    assert {unit.priority for unit in Pool.of(state, Gangs()).units} == {7}


_QUEUE_NAMES = ("own", "q1", "q2")
GI = 2**30


@settings(max_examples=200, deadline=None)
# Two parts of q1 with equal shares (by cpu) but not equal memory: which one ranks last decides.
@example(figures=[(0, 1), (12, 10), (0, 1)], drawn=[("q1", 0, True, 4, 0), ("q1", 1, True, 4, 4)])
@given(
    figures=st.lists(
        st.tuples(st.integers(0, 40), st.integers(1, 20)), min_size=3, max_size=3
    ),  # per queue: allocated and deserved cpu (and as many Gi of memory)
    drawn=st.lists(
        st.tuples(
            st.sampled_from(_QUEUE_NAMES),
            st.integers(0, 4),  # which gang of that queue
            st.booleans(),  # whole, or a spare member
            st.integers(1, 8),  # cpu
            st.integers(0, 8),  # memory, Gi (shares tie with different requests)
        ),
        max_size=12,
    ),
)
def test_the_greedy_set_grows_valid_exactly_as_the_whole_check_says(
    figures: list[tuple[int, int]], drawn: list[tuple[str, int, bool, int, int]]
) -> None:
    """Greedy's unit-by-unit check (`_Taking`) allows a unit exactly when `_valid` allows the
    set with it: same gangs whole and by spare members, same queues taken below their share."""
    queues = {
        name: QueueView(
            make_queue(name).model(),
            allocated=Resources({CPU: allocated * 1000, MEMORY: allocated * GI}),
            deserved=Resources({CPU: deserved * 1000, MEMORY: deserved * GI}),
        )
        for name, (allocated, deserved) in zip(_QUEUE_NAMES, figures, strict=True)
    }
    taking = victims._Taking(queues, "own")
    chosen: list[Unit] = []
    for index, (queue, gang, whole, cpu, memory) in enumerate(drawn):
        pod = make_pod(f"p{index}").cpu(str(cpu)).memory(f"{memory}Gi").model()
        unit = Unit(f"{queue}/g{gang}", queue, 0, ((pod, "n0"),), whole=whole)
        allowed = victims._valid([*chosen, unit], queues, "own")
        assert taking.allows(unit) == allowed
        if allowed:
            taking.add(unit)
            chosen.append(unit)
