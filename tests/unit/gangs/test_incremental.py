"""What is kept between calls equals what a fresh count says, after any sequence of changes.

Gang views are memoized in the state, the queue tally and the set of unplaced gangs are brought up
to date from the state's gang change log, and a walk plans on a `Room` kept in binpack's order and
moved along with the nodes that changed; hypothesis drives random sequences of changes and every
step compares them with a recount from scratch, or with the placement rule spelled out plainly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.objects import Pod
from extender.api.resources import EMPTY, Resources
from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.gangs import members as members_module
from extender.gangs.members import Unplaced, largest_first, view_gang
from extender.gangs.placement import Room
from extender.gangs.queues import QueueTally, account
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
    members_module._VIEWS.forget(state)  # (a view computed anew, not the one kept)
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


def _first_fit(
    members: list[Pod], nodes: Mapping[str, NodeInfo], taken: Mapping[str, Resources]
) -> dict[str, str]:
    """The placement rule spelled out plainly: largest member first, each onto the first node
    (least free cpu, then memory, then name, as free was before placing) that fits it now."""
    free = {
        n: info.free - taken.get(n, EMPTY) for n, info in nodes.items() if not info.unschedulable
    }
    order = sorted(free, key=lambda n: (free[n]["cpu"], free[n]["memory"], n))
    placed = {}
    for pod in sorted(members, key=largest_first):
        for name in order:
            info = nodes[name]
            fits = pod.request.shortfall(free[name]) is None
            if fits and pod.may_run_on(info.labels, info.taints, name):
                placed[pod.metadata.uid] = name
                free[name] = free[name] - pod.request
                break
    return placed


node_specs = st.lists(
    st.tuples(st.integers(0, 8), st.integers(0, 3), st.booleans(), st.booleans()),
    min_size=1,
    max_size=8,
)  # cpu, memory Gi, cordoned, labelled


@settings(max_examples=150, deadline=None)
@given(
    node_specs,
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3)), max_size=10),  # taken per node
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans()), max_size=6),
)
def test_a_kept_room_places_as_the_plain_rule_does(
    specs: list[tuple[int, int, bool, bool]],
    takes: list[tuple[int, int]],
    members: list[tuple[int, int, bool]],
) -> None:
    builders = []
    for index, (cpu, memory, cordoned, labelled) in enumerate(specs):
        node = make_node(f"n{index}").cpu(str(cpu)).memory(f"{memory}Gi")
        node = node.cordoned() if cordoned else node
        builders.append(node.label("disk", "ssd") if labelled else node)
    state = cluster(builders)
    nodes = state.view().nodes
    taken: dict[str, Resources] = {}
    room = Room(nodes)
    for which, cpu in takes:  # a walk claiming capacity, one slot at a time
        name = f"n{which % len(specs)}"
        amount = Resources({"cpu": cpu * 500})
        taken[name] = taken.get(name, EMPTY) + amount
        room.take(name, amount)
    pods = []
    for index, (cpu, memory, ssd) in enumerate(members):
        pod = make_pod(f"m{index}").uid(f"m{index}").cpu(str(cpu)).memory(f"{memory}Gi")
        pods.append((pod.node_selector("disk", "ssd") if ssd else pod).model())
    expected = _first_fit(pods, nodes, taken)
    assignment, failures = room.place(pods)
    assert assignment == expected
    assert sum(failures.values()) == len(pods) - len(expected)
    assert room.place(pods)[0] == expected  # placing takes nothing off the room
    assert Room(nodes, taken).place(pods)[0] == expected


def test_a_room_follows_the_nodes_that_changed() -> None:
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(4)])
    view = state.view()
    room, seen = Room(view.nodes), view.generation
    state.upsert_pod(make_pod("a").cpu("3").on("n2").model())
    state.upsert_node(make_node("n1").cpu("4").cordoned().model())
    state.delete_node("n3")
    state.upsert_node(make_node("n4").cpu("1").model())
    view = state.view()
    changed = view.changed_since(seen)
    assert changed is not None
    room.update(view.nodes, changed)
    fresh = Room(view.nodes)
    assert room.free == fresh.free
    pods = [make_pod(f"p{i}").uid(f"p{i}").cpu("1").model() for i in range(4)]
    assert room.place(pods) == fresh.place(pods)
    assert list(room.place(pods)[0].values()).count("n2") == 1  # fullest first: n2, n4, n0
