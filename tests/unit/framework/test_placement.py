"""Room.place puts alike members node by node, as many as fit at once, and stops a plan without
reasons at the first member with no node: the same assignment as first fit member by member,
largest first, onto the nodes in binpack's order as they were when the plan began (what place
did before, written out here plainly), on random rooms with labels, selectors, reservations and
cordoned nodes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.objects import Pod
from extender.api.resources import CPU, MEMORY, Resources
from extender.cache.snapshot import NodeInfo
from extender.framework.members import largest_first
from extender.framework.placement import Room
from tests.builders import cluster, make_node, make_pod

CPUS = ("500m", "1", "2", "3", "4")
MEMORIES = ("512Mi", "1Gi", "2Gi", "4Gi")


@st.composite
def rooms(draw: st.DrawFn) -> tuple[dict[str, NodeInfo], dict[str, Resources], list[Pod]]:
    nodes = []
    for index in range(draw(st.integers(1, 7))):
        node = make_node(f"n{index}").cpu(draw(st.sampled_from(("2", "4", "8"))))
        node = node.memory(draw(st.sampled_from(("4Gi", "8Gi", "16Gi"))))
        node = node.label("zone", draw(st.sampled_from("ab")))
        nodes.append(node.cordoned() if draw(st.booleans()) and index else node)
    pods = []
    for index in range(draw(st.integers(1, 12))):
        pod = make_pod(f"p{index:02d}").uid(f"u{index}")
        pod = pod.cpu(draw(st.sampled_from(CPUS))).memory(draw(st.sampled_from(MEMORIES)))
        zone = draw(st.sampled_from(("", "a", "b")))
        pods.append((pod.node_selector("zone", zone) if zone else pod).model())
    infos = cluster(nodes).view().nodes
    held = {
        name: Resources.parse({"cpu": draw(st.sampled_from(("0", "1", "2")))})
        for name in draw(st.sets(st.sampled_from(sorted(infos))))
    }
    return dict(infos), held, pods


def first_fit(
    nodes: dict[str, NodeInfo], held: dict[str, Resources], pods: list[Pod]
) -> tuple[dict[str, str], int]:
    """Member by member, largest first: the first node in the order of the plan's start (least
    free cpu, then memory, then name) with room left that it may run on."""
    free = {
        name: info.free - held[name] if name in held else info.free
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
    nodes, held, pods = drawn
    expected, missing = first_fit(nodes, held, pods)
    room = Room(nodes, held)
    assignment, failures = room.place(pods)
    assert assignment == expected  # the members that fit, on the same nodes
    assert sum(failures.values()) == missing
    assert room.fits(pods) == (missing == 0)
    assert room.nodes_for(pods) == (set(expected.values()) if missing == 0 else None)
    _, quick = room.place(pods, explain=False)
    assert bool(quick) == bool(missing)  # stops at the first member with no node
