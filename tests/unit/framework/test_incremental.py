"""What is kept between calls equals what a fresh count says, after any sequence of changes.

Gang views are memoized in the state, the queue tally and the set of unplaced gangs are brought up
to date from the state's gang change log; hypothesis drives random sequences of pod, placement and
PodGroup changes and every step compares them with a recount from scratch.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.cache.state import ClusterState
from extender.framework.members import Unplaced, view_gang
from extender.framework.queues import QueueTally, account
from tests.builders import cluster, make_group, make_node, make_pod

GANGS = ["a", "b", "c"]
NODES = ["n1", "n2"]
QUEUES = ["default", "q1"]

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("pod"),
            st.integers(0, 5),  # which pod
            st.sampled_from([*GANGS, ""]),  # its gang ("" none)
            st.sampled_from(["", *NODES]),  # bound where ("" pending)
            st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        ),
        st.tuples(st.just("delete"), st.integers(0, 5)),
        st.tuples(st.just("assume"), st.integers(0, 5), st.sampled_from(NODES)),
        st.tuples(st.just("forget"), st.integers(0, 5)),
        st.tuples(
            st.just("group"), st.sampled_from(GANGS), st.integers(1, 3), st.sampled_from(QUEUES)
        ),
        st.tuples(st.just("ungroup"), st.sampled_from(GANGS)),
    ),
    max_size=40,
)


def _apply(state: ClusterState, step: tuple[object, ...]) -> None:
    kind, *rest = step
    if kind == "pod":
        index, gang, node, phase = rest
        pod = make_pod(f"p{index}").uid(f"u{index}").cpu(f"{int(str(index)) + 1}")
        pod = pod.group(str(gang)) if gang else pod
        pod = pod.on(str(node)) if node else pod
        state.upsert_pod(pod.phase(str(phase)).model())
    elif kind == "delete":
        state.delete_pod(f"u{rest[0]}")
    elif kind == "assume":
        pod = state.pods.get(f"u{rest[0]}")
        if pod is not None and not pod.spec.node_name:
            state.assume(pod, str(rest[1]))
    elif kind == "forget":
        state.forget(f"u{rest[0]}")
    elif kind == "group":
        name, size, queue = rest
        state.upsert_pod_group(
            make_group(str(name)).min_member(int(str(size))).queue(str(queue)).model()
        )
    elif kind == "ungroup":
        state.delete_pod_group(f"default/{rest[0]}")


def _fresh_view(state: ClusterState, key: str) -> object:
    state.gang_memo.pop(key, None)
    return view_gang(state, key)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_kept_figures_equal_a_recount(sequence: list[tuple[object, ...]]) -> None:
    state = cluster([make_node(name).cpu("8") for name in NODES])
    tally, unplaced = QueueTally(), Unplaced()
    for step in sequence:
        _apply(state, step)
        keys = [f"default/{gang}" for gang in GANGS]
        kept = {key: view_gang(state, key) for key in keys}
        for key in keys:
            fresh = _fresh_view(state, key)
            assert replace(kept[key]) == fresh, key  # a fresh copy of the kept one compares fields
        counted = account(state, {}, tally)
        recounted = account(state, {})
        for name, view in recounted.items():
            got = counted[name]
            assert (got.allocated, got.placed, got.request, got.deserved) == (
                view.allocated,
                view.placed,
                view.request,
                view.deserved,
            ), name
        expected = [
            key
            for key in state.pod_groups
            if view_gang(state, key).pending and not view_gang(state, key).stands
        ]
        assert sorted(unplaced.keys(state)) == sorted(expected)


def test_capacity_follows_nodes_not_bindings() -> None:
    state = cluster([make_node("n1").cpu("4"), make_node("n2").cpu("8")])
    assert state.capacity()["cpu"] == 12_000
    state.upsert_pod(make_pod("p").cpu("2").on("n1").model())
    assert state.capacity()["cpu"] == 12_000
    state.upsert_node(make_node("n2").cpu("8").cordoned().model())
    assert state.capacity()["cpu"] == 4_000
    state.upsert_node(make_node("n3").cpu("1").model())
    assert state.capacity()["cpu"] == 5_000
    state.delete_node("n1")
    assert state.capacity()["cpu"] == 1_000
