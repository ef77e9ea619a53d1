"""Where a starving gang drains toward (`gangs.drain`) is first fit member by member, largest
first, onto the nodes as if they were empty, from the previous targets then the nodes with most
free: what drain did before it placed alike members node by node, written out here plainly and
compared on random rooms with labels, selectors, previous targets and claimed capacity."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.resources import CPU, EMPTY, MEMORY, Resources
from extender.cache.snapshot import NodeInfo
from extender.gangs.drain import drain
from extender.gangs.members import GangView, largest_first, view_gang
from extender.gangs.placement import Room
from tests.builders import cluster, make_group, make_node, make_pod

CPUS = ("500m", "1", "2", "3")
MEMORIES = ("512Mi", "1Gi", "2Gi")


@st.composite
def starving(draw: st.DrawFn) -> tuple[GangView, Room, dict[str, Resources] | None]:
    nodes = []
    for index in range(draw(st.integers(1, 6))):
        node = make_node(f"n{index}").cpu(draw(st.sampled_from(("2", "4", "8"))))
        node = node.memory(draw(st.sampled_from(("4Gi", "8Gi"))))
        nodes.append(node.label("zone", draw(st.sampled_from("ab"))))
    pods = []
    for index in range(draw(st.integers(1, 10))):
        pod = make_pod(f"p{index:02d}").uid(f"u{index}").group("big")
        pod = pod.cpu(draw(st.sampled_from(CPUS))).memory(draw(st.sampled_from(MEMORIES)))
        zone = draw(st.sampled_from(("", "", "a")))
        pods.append(pod.node_selector("zone", zone) if zone else pod)
    state = cluster(nodes, pods)
    state.upsert_pod_group(make_group("big").min_member(len(pods)).model())
    infos = state.view().nodes
    room = Room(infos)
    for name in draw(st.sets(st.sampled_from(sorted(infos)))):
        room.take(name, Resources.parse({"cpu": draw(st.sampled_from(("1", "2")))}))
    previous = None
    if draw(st.booleans()):
        previous = {name: Resources.parse({"cpu": "1"}) for name in sorted(infos)[:2]}
    return view_gang(state, "default/big"), room, previous


def plainly(
    gang: GangView, room: Room, previous: dict[str, Resources] | None
) -> dict[str, Resources]:
    nodes, free = room.nodes, room.free
    kept = [n for n in sorted(previous or ()) if n in free]
    kept.sort(key=lambda n: (-free[n][CPU], -free[n][MEMORY], n))
    rest = sorted(
        (n for n in free if n not in kept), key=lambda n: (-free[n][CPU], -free[n][MEMORY], n)
    )
    target: dict[str, Resources] = {}
    for pod in sorted(gang.pending, key=largest_first):
        for name in kept + rest:
            info: NodeInfo = nodes[name]
            after = target.get(name, EMPTY) + pod.request
            if after.shortfall(info.allocatable) is None and pod.may_run_on(
                info.labels, info.taints, name
            ):
                target[name] = after
                break
    return target


@settings(max_examples=300, deadline=None)
@given(starving())
def test_drain_targets_are_first_fit_member_by_member(
    drawn: tuple[GangView, Room, dict[str, Resources] | None],
) -> None:
    gang, room, previous = drawn
    target, taken = drain(gang, room, previous)
    assert target == plainly(gang, room, previous)
    assert list(target) == list(plainly(gang, room, previous))  # in the order they were found
    for name, amount in taken.items():  # what is free there now, up to the target
        assert all(0 < amount[r] <= min(target[name][r], room.free[name][r]) for r in amount)
