"""Explanations of where a gang is and why, in plain words."""

from __future__ import annotations

from extender.api.engine_settings import GangSettings
from extender.api.scheduling import GANG_GATE
from extender.framework.explain import explain
from tests.builders import (
    cluster,
    make_group,
    make_hyper_node,
    make_node,
    make_pod,
    make_queue,
    running,
    waiting,
)
from tests.engines import make_engine


def test_a_gang_that_does_not_fit_says_why_and_what_each_member_lacks() -> None:
    state = cluster([make_node("n0").cpu("4"), make_node("n1").cpu("4")])
    running(state, "old", ["n0", "n1"], cpu="3")
    waiting(state, "big", 3, cpu="2")
    engine = make_engine()
    engine.filter(state, state.pods["uid-default-big-0"], [])
    answer = explain(state, engine, "default/big")
    assert answer.state == "Waiting"
    text = answer.text()
    assert "gang default/big: 0 of 3 members placed, 3 pending (queue default)" in text
    assert "waiting: gang default/big" in text  # the gang rules' own reason
    assert "3 pending asking cpu 2: fits on no node" in text
    assert "fits on no node; the roomiest, n0: Insufficient cpu: requested 2, free 1" in text
    assert "queue default: allocated cpu 6" in text


def test_an_admitted_gang_says_where_its_capacity_is_reserved() -> None:
    state = cluster([make_node("n0").cpu("8")])
    waiting(state, "g", 2, cpu="2")
    engine = make_engine()
    engine.filter(state, state.pods["uid-default-g-0"], [])
    answer = explain(state, engine, "default/g")
    assert answer.state == "Admitted"
    assert "capacity is reserved for 2 members on n0" in answer.text()
    # (its own reservation is room for its members: not "fits on no node")
    assert "2 pending asking cpu 2: one fits on 1 node now (its reservation or unreserved" in (
        answer.text()
    )


def test_an_admitted_gang_on_full_nodes_fits_on_its_own_reservation_only() -> None:
    state = cluster([make_node("n0").cpu("4"), make_node("n1").cpu("4")])
    waiting(state, "g", 2, cpu="4")
    waiting(state, "other", 1, cpu="1")
    engine = make_engine()
    engine.filter(state, state.pods["uid-default-g-0"], [])
    text = explain(state, engine, "default/g").text()
    assert "capacity is reserved for 2 members on n0, n1" in text
    assert "2 pending asking cpu 4: one fits on 2 nodes now" in text
    # Another gang sees that capacity as held.
    other = explain(state, engine, "default/other").text()
    assert "1 pending asking cpu 1: fits on no node" in other


def test_a_member_asking_for_nothing_says_so() -> None:
    state = cluster([make_node("n0").cpu("4")])
    waiting(state, "empty", 1, cpu="0")
    text = explain(state, make_engine(), "default/empty").text()
    assert "1 pending asking no resources: one fits on 1 node now" in text


def test_a_gang_behind_another_names_it_and_its_backoff() -> None:
    state = cluster([make_node("n0").cpu("4")])
    waiting(state, "first", 2, cpu="2")
    waiting(state, "second", 2, cpu="2")
    engine = make_engine(GangSettings(backoff=30.0))
    engine.filter(state, state.pods["uid-default-first-0"], [])  # admitted: holds n0
    engine.filter(state, state.pods["uid-default-second-0"], [])
    engine.release("default/second", back_off=True)
    text = explain(state, engine, "default/second").text()
    assert "gangs with reservations: default/first" in text
    assert "backing off for 30s more" in text or "backing off for 29s more" in text


def test_a_closed_queue_and_a_gang_that_stands_and_one_that_is_not_there() -> None:
    state = cluster([make_node("n0").cpu("8")])
    state.upsert_queue(make_queue("research").model())
    running(state, "done", ["n0", "n0"], queue="research")
    answer = explain(state, make_engine(), "default/done")
    assert answer.state == "Standing"
    assert "queue research: allocated cpu 4" in answer.text()
    missing = explain(state, make_engine(), "default/nothing")
    assert missing.state == "NotFound"


def test_a_held_gang_says_it_waits_behind_lahars_gate_for_its_turn() -> None:
    """Two held gangs that fit, one member in flight allowed: the first is let in, the second
    fits and waits for the first to reach the scheduler."""
    state = cluster([make_node("n0").cpu("8")])
    for name in ("a", "b"):
        pod = make_pod(f"{name}-0").uid(f"{name}-0").cpu("1").group(name).scheduler("lahar")
        state.upsert_pod(pod.gated(GANG_GATE).model())
        state.upsert_pod_group(make_group(name).min_member(1).model())
    engine = make_engine(GangSettings(max_pods_in_flight=1), schedulers={"lahar"})
    assert engine.let_in(state) == ["default/a"]
    text = explain(state, engine, "default/b").text()
    assert "waiting: it fits now; Lahar lifts its pods' gate when fewer than 1 members" in text
    assert "(1 now)" in text


def test_a_gang_in_a_queue_tree_names_its_path_and_the_parent_at_its_capability() -> None:
    state = cluster([make_node("n0").cpu("16")])
    state.upsert_queue(make_queue("ml").capability(cpu="8").model())
    for leaf in ("team-a", "team-b"):
        state.upsert_queue(make_queue(leaf).set("spec.parent", "ml").model())
    running(state, "b-run", ["n0", "n0"], cpu="4", queue="team-b")
    waiting(state, "a-wait", 1, cpu="2", queue="team-a")
    engine = make_engine()
    engine.filter(state, state.pods["uid-default-a-wait-0"], [])
    text = explain(state, engine, "default/a-wait").text()
    assert "queue team-a's ancestor root/ml would have more cpu than its capability" in text
    assert "queue root/ml/team-a: allocated nothing" in text
    assert "parent root/ml: allocated cpu 8, pods 2" in text
    assert "at its capability (cpu 8)" in text


def test_a_hard_gang_says_which_tier_it_needs_and_what_each_hyper_node_has_free() -> None:
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(4)])
    state.upsert_hyper_node(make_hyper_node("s0").nodes("n0", "n1").model())
    state.upsert_hyper_node(make_hyper_node("s1").nodes("n2", "n3").model())
    for node in ("n0", "n2", "n3"):
        running(state, f"on-{node}", [node], cpu="2")
    for index in range(4):
        state.upsert_pod(make_pod(f"tf-{index}").cpu("2").group("tf").model())
    state.upsert_pod_group(make_group("tf").min_member(4).network("hard", 1).model())
    engine = make_engine()
    engine.filter(state, state.pods["uid-default-tf-0"], [])
    text = explain(state, engine, "default/tf").text()
    assert (
        "gang default/tf: needs 8 cpu inside one tier-1 HyperNode; the largest free is 6 cpu in s0"
        in text
    )
    assert "network topology (hard): inside one tier-1 HyperNode; free cpu: s0 6, s1 4" in text
