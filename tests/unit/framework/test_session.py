"""A session filters and scores over a snapshot, and the per-shape tables it keeps between calls
always equal a fresh evaluation, whatever happened in between."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.candidates import Candidates
from extender.api.resources import CPU, Resources
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, Slot
from extender.framework.policy import Policy, build_policy
from extender.gangs import order as order_module
from extender.gangs.refusals import Rejection
from extender.plugins import REGISTRY
from tests.builders import cluster, make_group, make_node, make_pod


def make_policy(*plugins: str) -> Policy:
    document = {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "SchedulerPolicy",
        "tiers": [{"plugins": [{"name": name} for name in plugins]}],
    }
    return build_policy(document, REGISTRY)


def test_filter_names_every_failed_node_and_why() -> None:
    state = cluster(
        [make_node("small").cpu("2"), make_node("full").cpu("8"), make_node("ok").cpu("8")],
        [make_pod("a").cpu("7").on("full")],
    )
    session = Engine(make_policy("predicates")).session(state.snapshot())

    outcome = session.fit(make_pod("p").cpu("4").model(), ["small", "full", "ok", "ghost"])

    assert outcome.passed == ["ok"]
    assert outcome.failed == {
        "full": "Insufficient cpu: requested 4, free 1",
        "ghost": "node ghost is not in Lahar's cache (just created, or already deleted)",
    }
    assert outcome.unresolvable == {"small": "Insufficient cpu: requested 4, allocatable 2"}


RESERVED = Slot("reserved", Resources({CPU: 6000}))


@pytest.mark.parametrize(
    ("credit", "passing"),
    [
        ({}, ["ok"]),  # what admitted gangs reserve on "reserved" leaves 2 cpu of its 8
        ({"reserved": RESERVED.request}, ["ok", "reserved"]),  # its own slot is its to use
    ],
)
def test_without_reasons_the_same_nodes_pass(
    credit: dict[str, Resources], passing: list[str]
) -> None:
    state = cluster(
        [make_node(name).cpu("8") for name in ("full", "reserved", "ok")]
        + [make_node("small").cpu("2")],
        [make_pod("a").cpu("7").on("full")],
    )
    engine = Engine(make_policy("gang", "predicates"))
    assert engine.gang_rules
    engine.restore("default/g", {"m0": RESERVED})
    session = engine.session(state.snapshot())
    pod = make_pod("p").cpu("4").model()
    names = ["small", "full", "reserved", "ok", "ghost"]

    explained = session.fit(pod, names, credit=credit)
    quick = session.fit(pod, names, credit=credit, with_reasons=False)

    assert sorted(explained.passed) == sorted(quick.passed) == passing
    assert not quick.failed and not quick.everything_passed


def test_a_filter_call_everything_passes_leaves_the_candidates_undecoded() -> None:
    """At thousands of names, decoding the list costs more than the decision: when no gang holds
    capacity on them, the engine says everything passed without reading a name (the filter verb
    echoes the request's own bytes)."""
    state = cluster([make_node(name).cpu("8") for name in ("n0", "n1")])
    engine = Engine(make_policy("gang", "predicates"))
    candidates = Candidates(raw=json.dumps(["n0", "n1"]).encode())
    outcome = engine.filter(state, make_pod("p").cpu("1").model(), candidates)
    assert outcome.everything_passed and outcome.failed == {} and outcome.gang_reason is None
    assert candidates._names is None


def test_binpack_ranks_the_fullest_node_that_fits_first() -> None:
    state = cluster(
        [make_node("empty").cpu("8"), make_node("half").cpu("8"), make_node("most").cpu("8")],
        [make_pod("a").cpu("4").on("half"), make_pod("b").cpu("6").on("most")],
    )
    session = Engine(make_policy("predicates", "binpack")).session(state.snapshot())
    pod = make_pod("p").cpu("1").model()

    scores = dict(session.score(pod, ["empty", "half", "most", "ghost"]))

    assert scores == {"empty": 1, "half": 6, "most": 9, "ghost": 0}
    reply = json.loads(session.score_reply(pod, ["most", "ghost", "empty"]))
    assert reply == [{"Host": "most", "Score": 9}, {"Host": "empty", "Score": 1}]  # no zeros


def test_a_reply_leaves_out_the_nodes_scoring_zero_as_they_come_and_go() -> None:
    state = cluster([make_node("a").cpu("100"), make_node("b").cpu("100")])
    engine = Engine(make_policy("predicates", "binpack"))
    pod = make_pod("p").cpu("1").model()
    assert json.loads(engine.session(state.snapshot()).score_reply(pod, ["a", "b"])) == []
    state.upsert_pod(make_pod("x").uid("x").cpu("60").on("b").model())
    reply = json.loads(engine.session(state.snapshot()).score_reply(pod, ["a", "b"]))
    assert reply == [{"Host": "b", "Score": 6}]
    state.delete_pod("x")
    assert json.loads(engine.session(state.snapshot()).score_reply(pod, ["a", "b"])) == []


def test_no_scorer_scores_zero() -> None:
    state = cluster([make_node("n1")])
    session = Engine(make_policy("predicates")).session(state.snapshot())
    assert session.score(make_pod("p").cpu("1").model(), ["n1"]) == [("n1", 0)]


NODES = [f"n{i}" for i in range(4)]
operation = st.one_of(
    st.tuples(st.just("bind"), st.sampled_from(NODES), st.integers(1, 4000)),
    st.tuples(st.just("finish"), st.integers(0, 30), st.just(0)),
    st.tuples(st.just("node"), st.sampled_from(NODES), st.integers(0, 8)),
    st.tuples(st.just("score"), st.integers(500, 5000), st.just(0)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(operation, max_size=30))
def test_incremental_tables_equal_a_fresh_evaluation(ops: list[tuple[str, object, int]]) -> None:
    state = ClusterState()
    for name in NODES:
        state.upsert_node(make_node(name).cpu("8").model())
    engine = Engine(make_policy("predicates", "binpack"))
    bound: list[str] = []
    shapes = [make_pod("p").cpu(f"{m}m").model() for m in (500, 2000, 7000)]
    for kind, target, amount in ops:
        if kind == "bind":
            pod = make_pod(f"b{len(bound)}").cpu(f"{amount}m").uid(f"b{len(bound)}")
            state.upsert_pod(pod.on(str(target)).model())
            bound.append(f"b{len(bound)}")
        elif kind == "finish" and bound:
            state.delete_pod(bound[int(str(target)) % len(bound)])
        elif kind == "node":
            if amount == 0:
                state.delete_node(str(target))
            else:
                state.upsert_node(make_node(str(target)).cpu(str(amount)).model())
        elif kind == "score":
            shapes.append(make_pod("p").cpu(f"{amount}m").model())
        for pod in shapes:
            kept = engine.session(state.snapshot())
            fresh = Engine(engine.policy).session(state.snapshot())
            assert kept.fit(pod, NODES) == fresh.fit(pod, NODES)
            quick = kept.fit(pod, NODES, with_reasons=False)  # (from the nodes the table passes)
            assert sorted(quick.passed) == sorted(fresh.fit(pod, NODES).passed)
            assert kept.score(pod, NODES) == fresh.score(pod, NODES)


def test_a_filter_without_reasons_leaves_a_refusals_words_to_whoever_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The simulator's scheduler filters without reasons: a gang refused behind another is
    refused as surely, and the words of why (a plan made again, with reasons) are worked out
    only when read, the same words a filter with reasons gives."""
    worded: list[str] = []
    lacking = order_module._Claims._lacking

    def counted(claims: Any, gang: Any, at: int) -> Rejection:
        worded.append(gang.key)
        return lacking(claims, gang, at)

    monkeypatch.setattr(order_module._Claims, "_lacking", counted)

    def refused_behind_a_gang() -> tuple[ClusterState, Engine]:
        ahead = [make_pod(f"a-{i}").cpu("1").group("a").priority(10) for i in range(2)]
        behind = [make_pod(f"b-{i}").cpu("3").group("b") for i in range(2)]
        state = cluster([make_node("n1").cpu("4")], [*ahead, *behind])
        state.upsert_pod_group(make_group("a").min_member(2).model())
        state.upsert_pod_group(make_group("b").min_member(2).model())
        engine = Engine(make_policy("gang", "predicates"))
        engine.filter(state, state.pods["uid-default-a-0"], ["n1"], fit=True, with_reasons=False)
        return state, engine

    state, engine = refused_behind_a_gang()
    quick = engine.filter(
        state, state.pods["uid-default-b-0"], ["n1"], fit=True, with_reasons=False
    )
    assert quick.gang_reason == "" and not quick.passed and not quick.failed
    assert worded == []  # (refused, and not worded)
    kept = engine.refusal("default/b")  # (read: worded now)
    assert kept is not None and kept.rejection.cause == "NotEnoughResources"
    assert worded == ["default/b"]

    state, with_words = refused_behind_a_gang()
    explained = with_words.filter(state, state.pods["uid-default-b-0"], ["n1"], fit=True)
    assert explained.gang_reason is not None and "cannot be placed" in explained.gang_reason
    assert kept.rejection.message == explained.gang_reason
