"""Room.place puts alike members node by node, as many as fit at once, and stops a plan without
reasons at the first member with no node: the same assignment as first fit member by member,
largest first, onto the nodes in binpack's order as they were when the plan began (what place
did before, written out here plainly), on random rooms with labels, selectors, reservations,
cordoned and tainted nodes (which nodes a kind of pod may run on is worked out once and kept,
with binpack's order of those nodes, as the room changes). The minResources look, which ends at
the first node where the free capacity summed so far covers the need, refuses exactly when the
sum over every node the members may run on falls short, and says that sum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.objects import Pod
from extender.api.resources import CPU, MEMORY, Resources
from extender.cache.snapshot import NodeInfo
from extender.gangs import placement
from extender.gangs.members import GangView, largest_first
from extender.gangs.placement import KeptRoom, Room, at_least_zero, min_resources_shortfall
from tests.builders import cluster, make_group, make_node, make_pod

CPUS = ("500m", "1", "2", "3", "4")
MEMORIES = ("512Mi", "1Gi", "2Gi", "4Gi")


@st.composite
def rooms(draw: st.DrawFn) -> tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]]:
    nodes = []
    for index in range(draw(st.integers(1, 7))):
        node = make_node(f"n{index}").cpu(draw(st.sampled_from(("2", "4", "8"))))
        node = node.memory(draw(st.sampled_from(("4Gi", "8Gi", "16Gi"))))
        node = node.label("zone", draw(st.sampled_from("ab")))
        if draw(st.integers(0, 3)) == 0:  # a GPU node: tainted, for the pods that tolerate it
            node = node.taint("gpu")
        nodes.append(node.cordoned() if draw(st.booleans()) and index else node)
    pods = []
    for index in range(draw(st.integers(1, 12))):
        pod = make_pod(f"p{index:02d}").uid(f"u{index}")
        pod = pod.cpu(draw(st.sampled_from(CPUS))).memory(draw(st.sampled_from(MEMORIES)))
        zone = draw(st.sampled_from(("", "a", "b")))
        if draw(st.booleans()):
            pod = pod.tolerate_any("gpu")
        pods.append((pod.node_selector("zone", zone) if zone else pod).model())
    infos = cluster(nodes).view().nodes
    taken = {
        name: Resources.parse({"cpu": draw(st.sampled_from(("0", "1", "2")))})
        for name in draw(st.sets(st.sampled_from(sorted(infos))))
    }
    return dict(infos), taken, pods


def first_fit(
    nodes: dict[str, NodeInfo], taken: dict[str, Resources], pods: list[Pod]
) -> tuple[dict[str, str], int]:
    """Member by member, largest first: the first node in the order of the plan's start (least
    free cpu, then memory, then name) with room left that it may run on."""
    free = {
        name: info.free - taken[name] if name in taken else info.free
        for name, info in nodes.items()
        if not info.unschedulable
    }
    order = sorted(free, key=lambda name: (free[name][CPU], free[name][MEMORY], name))
    assignment: dict[str, str] = {}
    missing = 0
    for pod in sorted(pods, key=largest_first):
        for name in order:
            info = nodes[name]
            if pod.request.shortfall(free[name]) is None and pod.may_run_on(
                info.labels, info.taints, name
            ):
                free[name] = free[name] - pod.request
                assignment[pod.metadata.uid] = name
                break
        else:
            missing += 1
    return assignment, missing


@settings(max_examples=300, deadline=None)
@given(rooms())
def test_place_fits_and_nodes_for_agree_with_first_fit_member_by_member(
    drawn: tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]],
) -> None:
    nodes, taken, pods = drawn
    expected, missing = first_fit(nodes, taken, pods)
    room = Room(nodes, taken)
    assignment, failures = room.place(pods)
    assert assignment == expected  # the members that fit, on the same nodes
    assert sum(failures.values()) == missing
    assert room.fits(pods) == (missing == 0)
    assert room.nodes_for(pods) == (set(expected.values()) if missing == 0 else None)
    _, quick = room.place(pods, with_reasons=False)
    assert bool(quick) == bool(missing)  # stops at the first member with no node


def _twin(pod: Pod) -> Pod:
    """The same pod under another name and uid (the same place in `largest_first`)."""
    meta = pod.metadata
    renamed = {"name": "q" + meta.name[1:], "uid": "v" + meta.uid[1:]}
    return pod.model_copy(update={"metadata": meta.model_copy(update=renamed)})


@settings(max_examples=200, deadline=None)
@given(rooms(), st.data())
def test_placements_remembered_by_shape_are_the_ones_first_fit_makes(
    drawn: tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]], data: st.DataObject
) -> None:
    """A room keeps what a placement found, by the members' shape, until it changes: a gang
    alike under other names gets the same nodes position by position; a take, on the room or
    on a copy, leaves no stale answer behind."""
    nodes, taken, pods = drawn
    twin = [_twin(pod) for pod in pods]
    room = Room(nodes, taken)

    def agrees(room: Room, taken: dict[str, Resources], members: list[Pod]) -> None:
        expected, missing = first_fit(nodes, taken, members)
        for _ in range(2):  # worked out, then remembered
            assignment, failures = room.place(members)
            assert (assignment, sum(failures.values())) == (expected, missing)
            assert room.fits(members) == (missing == 0)
            used = room.nodes_for(members)
            assert used == (frozenset(expected.values()) if missing == 0 else None)
            assert bool(room.place(members, with_reasons=False)[1]) == bool(missing)

    agrees(room, taken, pods)
    agrees(room, taken, twin)
    name = data.draw(st.sampled_from(sorted(room.free)))
    amount = Resources.parse({"cpu": "1"})
    changed = room.copy()
    changed.take(name, amount)
    agrees(room, taken, twin)  # what the copy took changed nothing here
    agrees(changed, {**taken, name: taken.get(name, Resources()) + amount}, twin)


@given(rooms())
def test_most_free_cpu_is_the_roomiest_schedulable_node(
    drawn: tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]],
) -> None:
    nodes, taken, _ = drawn
    expected = max(
        (
            (info.free - taken.get(name, Resources()))[CPU]
            for name, info in nodes.items()
            if not info.unschedulable
        ),
        default=-1,
    )
    assert Room(nodes, taken).most_free_cpu == expected


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["take", "copy", "ask"]),
            st.integers(min_value=0, max_value=5),
            st.integers(min_value=-3, max_value=6),
        ),
        max_size=30,
    )
)
def test_the_free_cpu_a_room_keeps_per_group_of_nodes_follows_every_change(
    steps: list[tuple[str, int, int]],
) -> None:
    """A group's free cpu, kept and moved along as nodes change, on the room and its copies,
    is what summing the group's nodes again gives."""
    nodes = {f"n{i}": make_node(f"n{i}").cpu("4").model() for i in range(6)}
    infos = cluster(list(nodes.values())).view().nodes
    groups = [frozenset({"n0", "n1", "n2"}), frozenset({"n2", "n3"}), frozenset(nodes)]
    rooms = [Room(infos)]
    for action, node, cpu in steps:
        room = rooms[-1]
        if action == "take":
            room.take(f"n{node}", Resources({CPU: cpu * 1000}))
        elif action == "copy":
            rooms.append(room.copy())
        else:
            room.free_cpu_in(groups[node % len(groups)])
        for kept in rooms:
            for group in groups:
                expected = sum(max(kept.free[n][CPU], 0) for n in group if n in kept.free)
                assert kept.free_cpu_in(group) == expected


@settings(max_examples=300, deadline=None)
@given(
    rooms(),
    st.sampled_from(("1", "4", "9", "20", "40")),
    st.sampled_from(("1Gi", "8Gi", "40Gi")),
    st.integers(0, 3),
)
def test_min_resources_refuse_exactly_when_the_nodes_members_may_run_on_fall_short(
    drawn: tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]],
    cpu: str,
    memory: str,
    placed: int,
) -> None:
    nodes, taken, pods = drawn
    group = make_group("g").min_member(1).min_resources(cpu=cpu, memory=memory).model()
    gang = GangView("default/g", group, placed=pods[:placed], succeeded=[], pending=pods[placed:])
    room = Room(nodes, taken)
    needed = group.spec.min_resources
    for pod in gang.placed:
        needed = needed - pod.request
    free = Resources({})
    for name, left in room.free.items():
        info = nodes[name]
        if any(pod.may_run_on(info.labels, info.taints, name) for pod in gang.pending):
            free = free + at_least_zero(left)
    short = needed.shortfall(free)
    refusal = min_resources_shortfall(gang, room)
    assert (refusal is None) == (short is None)
    if refusal is not None and short is not None:
        assert f"minResources need {short} " in refusal.message


@settings(max_examples=200, deadline=None)
@given(rooms(), st.data())
def test_the_roomiest_node_is_the_one_with_most_free_that_the_pod_may_run_on(
    drawn: tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]], data: st.DataObject
) -> None:
    """Most free cpu, then memory, then the first by name, among the nodes the pod may run on,
    what a placement took (`taken`) counted; on a room that changed since it was first asked."""
    nodes, reserved, pods = drawn
    room = Room(nodes, reserved)
    for pod in pods:
        room.roomiest(pod)  # (what it works out once, kept)
    for name in data.draw(st.lists(st.sampled_from(sorted(nodes)), max_size=4)):
        room.take(name, Resources.parse({"cpu": "1"}))
        reserved = {
            **reserved,
            name: reserved.get(name, Resources()) + Resources.parse({"cpu": "1"}),
        }
    names = data.draw(st.sets(st.sampled_from(sorted(room.free))))
    taken = {name: room.free[name] - Resources.parse({"memory": "1Gi"}) for name in names}
    for pod in pods:
        free = {
            name: taken.get(name, info.free - reserved.get(name, Resources()))
            for name, info in nodes.items()
            if not info.unschedulable and pod.may_run_on(info.labels, info.taints, name)
        }
        expected = min(
            free, key=lambda name: (-free[name][CPU], -free[name][MEMORY], name), default=None
        )
        assert room.roomiest(pod, taken) == expected
        fitting = [
            name
            for name in free
            if pod.request.shortfall(nodes[name].free - reserved.get(name, Resources())) is None
        ]
        assert sorted(room.fitting(pod)) == sorted(fitting)  # (on the room: `taken` aside)


def test_a_room_brought_up_to_date_learns_where_pods_may_run_when_a_node_is_tainted() -> None:
    """Which nodes a kind of pod may run on is kept from one walk to the next (`KeptRoom` brings
    one room up to date), until a node's labels or taints change."""
    pod = make_pod("p").uid("u").cpu("1").node_selector("zone", "a").model()
    room = Room(
        cluster([make_node("n1").cpu("4").label("zone", "a"), make_node("n2").cpu("8")])
        .view()
        .nodes
    )
    assert room.nodes_for([pod]) == {"n1"}
    assert room.roomiest(pod) == "n1"
    tainted = cluster(
        [make_node("n1").cpu("4").label("zone", "a").taint("gpu"), make_node("n2").cpu("8")]
    )
    room.update(tainted.view().nodes, ["n1"])
    assert room.nodes_for([pod]) is None
    assert room.roomiest(pod) is None
    relabelled = cluster([make_node("n1").cpu("4"), make_node("n2").cpu("8").label("zone", "a")])
    room.update(relabelled.view().nodes, ["n1", "n2"])
    assert room.nodes_for([pod]) == {"n2"}
    assert room.roomiest(pod) == "n2"


@settings(max_examples=100, deadline=None)
@given(rooms(), st.data())
def test_a_room_keeping_few_kinds_of_pods_places_as_first_fit_does(
    drawn: tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]], data: st.DataObject
) -> None:
    """A room keeps what it knows of the last few kinds of pods only (`KINDS`): with more kinds
    than that, on the room, its copies and the copies of those, placements stay first fit's."""
    nodes, taken, pods = drawn
    kinds = data.draw(st.integers(1, 3))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(placement, "KINDS", kinds)
        room = Room(nodes, taken)
        for pod in pods:  # each kind in turn, placed on the room and on a copy
            for target in (room, room.copy()):
                assert target.place([pod])[0] == first_fit(nodes, taken, [pod])[0]
        copied = room.copy().copy()
        assert copied.place(pods)[0] == first_fit(nodes, taken, pods)[0]
        assert len(room._kinds) <= kinds and room._allowed.keys() == room._kinds.keys()


def test_a_node_uncordoned_joins_only_the_orders_of_the_pods_that_may_run_on_it() -> None:
    """A kind of pod that may run on every schedulable node plans on the order of all; a node
    uncordoned that it may not run on (tainted) must not become one of its nodes."""
    pod = make_pod("p").uid("u").cpu("1").model()
    free = make_node("n1").cpu("4")
    room = Room(cluster([free, make_node("n2").cpu("8").taint("gpu").cordoned()]).view().nodes)
    assert room.nodes_for([pod]) == {"n1"}
    room.take("n1", Resources.parse({"cpu": "4"}))
    uncordoned = cluster([free, make_node("n2").cpu("8").taint("gpu")]).view().nodes
    room.update(uncordoned, ["n2"])
    assert room.nodes_for([pod]) is None  # (n1 is full; n2 is tainted)
    assert room.roomiest(pod) == "n1"


def test_a_kept_room_over_the_caches_own_map_sees_a_node_tainted_in_place() -> None:
    """The cache's view is its own map of nodes, changed in place: a room kept from walk to walk
    tells what changed on a node from what it saw, not from that map."""
    pod = make_pod("p").uid("u").cpu("1").model()
    state = cluster([make_node("n1").cpu("4"), make_node("n2").cpu("4").taint("gpu")])
    kept = KeptRoom()
    assert kept.of(state.view()).nodes_for([pod]) == {"n1"}
    state.upsert_node(make_node("n1").cpu("4").taint("gpu").model())
    state.upsert_node(make_node("n2").cpu("4").model())
    assert kept.of(state.view()).nodes_for([pod]) == {"n2"}
    state.upsert_node(make_node("n2").cpu("4").cordoned().model())
    assert kept.of(state.view()).nodes_for([pod]) is None
