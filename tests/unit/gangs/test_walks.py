"""A walk of the fair order is kept through cluster changes that leave what it was made from as it
was, and only those: after any sequence of filter calls, binds of admitted members on their
slots, pods ending, pods of no gang coming and going and nodes tainted, an engine that keeps
walks answers every filter call as one that makes a new walk whenever the state or the ledger
moved: the same nodes pass, refused in the same words, the same slots."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.framework.policy import build_policy
from extender.plugins import REGISTRY
from tests.builders import cluster, make_group, make_node, make_pod

POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": "binpack"}]}],
}
NODES = ["n1", "n2", "n3"]
GANGS = {"a": (2, "2"), "b": (3, "1"), "c": (2, "3"), "d": (1, "4"), "e": (2, "1")}

steps = st.lists(
    st.one_of(
        st.tuples(st.just("ask"), st.sampled_from(sorted(GANGS)), st.integers(0, 2)),
        st.tuples(st.just("bind"), st.integers(0, 20)),
        st.tuples(st.just("end"), st.integers(0, 20)),
        st.tuples(st.just("plain"), st.sampled_from(NODES), st.integers(0, 1)),
        st.tuples(st.just("taint"), st.sampled_from(NODES)),
    ),
    max_size=40,
)


def _state() -> ClusterState:
    pods = [
        make_pod(f"{gang}-{index}").uid(f"{gang}-{index}").cpu(cpu).group(gang)
        for gang, (count, cpu) in GANGS.items()
        for index in range(count)
    ]
    state = cluster([make_node(name).cpu("4") for name in NODES], pods)
    for gang, (count, _) in GANGS.items():
        state.upsert_pod_group(make_group(gang).min_member(count).model())
    return state


def _slots(engine: Engine) -> list[tuple[str, str]]:
    """The unconsumed slots of the admitted gangs: (member uid, node)."""
    found = []
    for key in sorted(engine.admitted()):
        admission = engine.admission(key)
        assert admission is not None
        found += [(uid, slot.node) for uid, slot in admission.slots.items()]
    return sorted(found)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_a_kept_walk_answers_as_a_walk_made_afresh(sequence: list[tuple[object, ...]]) -> None:
    state = _state()
    keeping = Engine(build_policy(POLICY, REGISTRY), clock=lambda: 0.0)
    afresh = Engine(build_policy(POLICY, REGISTRY), clock=lambda: 0.0)
    # (a new walk whenever the state's stamp or the ledger moved, as a walk was made before)
    afresh._gangs._walks._same = lambda *_, **__: False  # type: ignore[union-attr,method-assign]
    bound: list[str] = []
    for kind, *rest in sequence:
        if kind == "ask":
            gang, index = str(rest[0]), int(str(rest[1]))
            pod = state.pods.get(f"{gang}-{index}")
            if pod is None or pod.spec.node_name or pod.finished:
                continue
            kept = keeping.filter(state, pod, NODES, fit=True)
            fresh = afresh.filter(state, pod, NODES, fit=True)
            assert (kept.gang_reason, sorted(kept.passed)) == (
                fresh.gang_reason,
                sorted(fresh.passed),
            )
        elif kind == "bind":  # a member of an admitted gang bound on its slot's node
            slots = _slots(keeping)
            assert slots == _slots(afresh)
            if not slots:
                continue
            uid, node = slots[int(str(rest[0])) % len(slots)]
            keeping.consume(uid, node)
            afresh.consume(uid, node)
            state.upsert_pod(
                state.pods[uid].model_copy(
                    update={"spec": state.pods[uid].spec.model_copy(update={"node_name": node})}
                )
            )
            bound.append(uid)
        elif kind == "taint":  # tainted, or no longer: where pods may run changes, not room
            name = str(rest[0])
            node = make_node(name).cpu("4")
            tainted = bool(state.view().nodes[name].taints)
            state.upsert_node((node if tainted else node.taint("gpu")).model())
        elif kind == "plain":  # a pod of no gang comes or goes: no queue is charged for it
            node, index = str(rest[0]), int(str(rest[1]))
            uid = f"plain-{node}-{index}"
            if uid in state.pods:
                state.delete_pod(uid)
            else:
                state.upsert_pod(make_pod(uid).uid(uid).cpu("1").on(node).model())
        elif bound:  # a bound pod ends: its node's room changes
            uid = bound.pop(int(str(rest[0])) % len(bound))
            pod = state.pods[uid]
            state.upsert_pod(
                pod.model_copy(
                    update={"status": pod.status.model_copy(update={"phase": "Succeeded"})}
                )
            )
    assert sorted(keeping.admitted()) == sorted(afresh.admitted())


def test_a_member_bound_on_its_slot_keeps_the_walk_and_a_pod_ending_does_not() -> None:
    state = _state()
    engine = Engine(build_policy(POLICY, REGISTRY), clock=lambda: 0.0)
    engine.filter(state, state.pods["a-0"], NODES, fit=True)  # a admitted
    engine.filter(state, state.pods["c-0"], NODES, fit=True)  # c refused, in the walk after

    def bind(uid: str) -> None:
        admission = engine.admission("default/a")
        assert admission is not None
        node = admission.slots[uid].node
        engine.consume(uid, node)
        pod = state.pods[uid]
        state.upsert_pod(
            pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})})
        )

    bind("a-0")  # (a leaves the line at its first member bound: a new walk)
    walk = engine.order(state).number
    bind("a-1")
    assert engine.order(state).number == walk  # (nothing changed for the gangs in line)
    ended = state.pods["a-0"]
    state.upsert_pod(
        ended.model_copy(update={"status": ended.status.model_copy(update={"phase": "Succeeded"})})
    )
    assert engine.order(state).number != walk  # (its node has room again)


def test_a_node_tainted_makes_a_new_walk() -> None:
    """The cache changes its map of nodes in place: the walk compares with each node as it was."""
    state = _state()
    engine = Engine(build_policy(POLICY, REGISTRY), clock=lambda: 0.0)
    engine.filter(state, state.pods["c-0"], NODES, fit=True)
    walk = engine.order(state).number
    state.upsert_node(make_node("n3").cpu("4").taint("gpu").model())
    assert engine.order(state).number != walk
