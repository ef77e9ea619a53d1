"""The preempt verb keeps only the scheduler's proposals Lahar's rules allow, or hands the gang to
Lahar's own preemptor; a case it cannot decide gets no candidate."""

from __future__ import annotations

from typing import Any

import pytest

from extender.actions.preempt import preempt
from extender.api.engine_settings import Rules
from extender.api.wire import ExtenderPreemptionArgs
from extender.cache.state import ClusterState
from tests.builders import cluster, make_node, make_pod, make_queue, running, waiting
from tests.engines import make_engine, preempting_engine

RULES = Rules()


def ask(
    state: ClusterState,
    pod: str,
    proposed: dict[str, list[str]],
    *,
    rules: Rules | None = RULES,
    pdb_violations: int = 0,
) -> tuple[dict[str, list[str]], str, bool]:
    """The scheduler's call for pod `pod` with node -> victim pod names; what Lahar keeps, with
    the preempt plugin's victim rules `rules` (None: no preempt plugin)."""
    uid = {p.metadata.name: p.metadata.uid for p in state.pods.values()}
    meta = {
        node: {"Pods": [{"UID": uid.get(n, n)} for n in names], "NumPDBViolations": pdb_violations}
        for node, names in proposed.items()
    }
    body = {"Pod": state.pods[uid[pod]].model_dump(by_alias=True), "NodeNameToMetaVictims": meta}
    args = ExtenderPreemptionArgs.model_validate(body)
    engine = make_engine() if rules is None else preempting_engine(rules)
    engine.filter(state, args.pod, [])  # the scheduler filtered the pod first
    decision = preempt(args, state, engine)
    name = {u: n for n, u in uid.items()}
    kept = {
        node: [name[v.uid] for v in victims.pods]
        for node, victims in decision.result.node_name_to_meta_victims.items()
    }
    return kept, decision.reason, decision.hand_off


def plain_scene() -> ClusterState:
    state = cluster([make_node(n).cpu("4") for n in ("n1", "n2", "n3")])
    for name, node, cpu in (("p1", "n1", "4"), ("p2a", "n2", "2"), ("p2b", "n2", "2")):
        state.upsert_pod(make_pod(name).cpu(cpu).on(node).phase("Running").model())
    running(state, "g", ["n3"], cpu="4")
    state.upsert_pod(make_pod("new").cpu("4").priority(100).model())
    return state


def test_a_plain_pod_keeps_the_cheapest_proposals_that_break_no_gang() -> None:
    kept, _, hand_off = ask(
        plain_scene(), "new", {"n1": ["p1"], "n2": ["p2a", "p2b"], "n3": ["g-0"], "n4": []}
    )
    assert kept == {"n1": ["p1"]} and not hand_off  # n2 costs two pods, n3 breaks gang g


def test_a_victim_the_cache_does_not_know_is_not_guessed() -> None:
    kept, reason, _ = ask(plain_scene(), "new", {"n1": ["ghost"], "n3": ["g-0"]})
    assert kept == {} and "breaks a gang, is protected" in reason and "is unknown" in reason


@pytest.mark.parametrize(
    "protect",
    [
        pytest.param(lambda pod: pod.annotate("volcano.sh/preemptable", "false"), id="annotation"),
        pytest.param(lambda pod: pod.label("volcano.sh/preemptable", "no"), id="unreadable label"),
        pytest.param(lambda pod: pod.ns("kube-system"), id="kube-system"),
        pytest.param(
            lambda pod: pod.priority_class("system-node-critical"), id="critical PriorityClass"
        ),
    ],
)
def test_a_plain_pod_never_takes_a_protected_one(protect: Any) -> None:
    state = plain_scene()
    state.upsert_pod(protect(make_pod("p1").cpu("4").on("n1").phase("Running").uid("p1")).model())
    kept, _, _ = ask(state, "new", {"n1": ["p1"], "n2": ["p2a", "p2b"]})
    assert kept == {"n2": ["p2a", "p2b"]}  # the dearer set: the cheaper one is protected


@pytest.mark.parametrize("pod", ["new", "urgent-0"])
def test_without_the_preempt_plugin_nothing_is_evicted_for_any_pod(pod: str) -> None:
    state = plain_scene()
    waiting(state, "urgent", 1, cpu="4", priority=100)
    kept, reason, hand_off = ask(state, pod, {"n1": ["p1"], "n2": ["p2a", "p2b"]}, rules=None)
    assert (kept, hand_off) == ({}, False)
    assert reason.endswith("preemption is off in Lahar's policy")


def gang_scene() -> ClusterState:
    state = cluster([make_node(n).cpu("4") for n in ("n1", "n2")])
    running(state, "low", ["n1"], cpu="4", priority=1)
    state.upsert_pod(make_pod("other").cpu("4").priority(1).on("n2").phase("Running").model())
    waiting(state, "urgent", 1, cpu="4", priority=100)
    return state


def test_lahars_victims_on_one_proposed_node_are_the_answer() -> None:
    kept, reason, hand_off = ask(gang_scene(), "urgent-0", {"n1": ["low-0"], "n2": ["other"]})
    assert kept == {"n1": ["low-0"]} and not hand_off
    assert "evicting 1 pods (default/low)" in reason


def test_other_proposals_go_to_lahars_own_preemptor() -> None:
    state = gang_scene()
    assert ask(state, "urgent-0", {"n2": ["other"]}) == (
        {},
        "gang default/urgent: Lahar's preemptor evicts whole gangs itself",
        True,
    )
    kept, _, hand_off = ask(state, "urgent-0", {"n1": ["low-0"]}, pdb_violations=1)
    assert kept == {} and hand_off  # its eviction may be refused: the preemptor dry-runs it


def test_a_gang_whose_victims_span_nodes_is_preempted_for_by_lahar() -> None:
    state = cluster([make_node(n).cpu("4") for n in ("n1", "n2")])
    running(state, "low", ["n1", "n2"], cpu="4", priority=1)
    waiting(state, "urgent", 2, cpu="4", priority=100)
    kept, _, hand_off = ask(state, "urgent-0", {"n1": ["low-0"], "n2": ["low-1"]})
    assert kept == {} and hand_off  # the scheduler would evict on one node only


def test_no_candidate_when_the_rules_allow_no_victim() -> None:
    state = cluster([make_node("n1").cpu("4")])
    running(state, "peer", ["n1"], cpu="4", priority=100)  # not lower priority
    waiting(state, "urgent", 1, cpu="4", priority=100)
    kept, reason, hand_off = ask(state, "urgent-0", {"n1": ["peer-0"]})
    assert kept == {} and not hand_off and "no valid victims" in reason


def test_no_candidate_for_an_admitted_gang() -> None:
    state = gang_scene()
    state.upsert_pod(
        make_pod("low-0").cpu("4").group("low").priority(1).phase("Succeeded").on("n1").model()
    )
    kept, reason, hand_off = ask(
        state, "urgent-0", {"n2": ["other"]}
    )  # admitted on n1 by the filter
    assert kept == {} and not hand_off and "admitted" in reason


def test_no_candidate_for_a_gang_refused_for_another_reason_or_with_preemption_off() -> None:
    state = gang_scene()
    state.upsert_queue(make_queue("default").state("Closed").model())
    kept, reason, _ = ask(state, "urgent-0", {"n1": ["low-0"]})
    assert kept == {} and "is Closed" in reason and "evicting would not let it in" in reason
    kept, reason, _ = ask(gang_scene(), "urgent-0", {"n1": ["low-0"]}, rules=None)
    assert kept == {} and "preemption is off" in reason
