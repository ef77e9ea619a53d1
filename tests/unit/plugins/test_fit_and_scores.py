"""Resource fit says why a node fails; binpack follows Volcano's formula; spread prefers room."""

from __future__ import annotations

import pytest

from extender.api.resources import Resources
from extender.cache.snapshot import NodeInfo
from extender.framework.status import Code
from extender.plugins import binpack, predicates, spread
from tests.builders import NodeBuilder, PodBuilder, cluster, make_node, make_pod


def node_with(node: NodeBuilder, *pods: PodBuilder) -> NodeInfo:
    model = node.model()
    state = cluster([model], [p.on(model.metadata.name) for p in pods])
    return state.snapshot().nodes[model.metadata.name]


@pytest.mark.parametrize(
    ("node", "pod", "code", "reason"),
    [
        (node_with(make_node("n").cpu("4")), make_pod("p").cpu("4"), None, None),
        (
            node_with(make_node("n").cpu("4"), make_pod("a").cpu("2500m")),
            make_pod("p").cpu("2"),
            Code.UNSCHEDULABLE,
            "Insufficient cpu: requested 2, free 1500m",
        ),
        (
            node_with(make_node("n").cpu("4")),
            make_pod("p").cpu("64"),
            Code.UNRESOLVABLE,
            "Insufficient cpu: requested 64, allocatable 4",
        ),
        (
            node_with(make_node("n").memory("4Gi"), make_pod("a").memory("3Gi")),
            make_pod("p").memory("1536Mi"),
            Code.UNSCHEDULABLE,
            "Insufficient memory: requested 1.5Gi, free 1Gi",
        ),
        (
            node_with(make_node("n")),
            make_pod("p").request("nvidia.com/gpu", "1"),
            Code.UNRESOLVABLE,
            "Insufficient nvidia.com/gpu: requested 1, node has none",
        ),
        (
            node_with(make_node("n").pods(1), make_pod("a")),
            make_pod("p"),
            Code.UNSCHEDULABLE,
            "Too many pods: 1 of 1 in use",
        ),
    ],
)
def test_fit(node: NodeInfo, pod: PodBuilder, code: Code | None, reason: str | None) -> None:
    status = predicates.Predicates().filter_node(pod.model().request, node)
    if code is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reason) == (code, reason)


def test_binpack_is_volcanos_formula() -> None:
    plugin = binpack.configure({"binpack.cpu": 3, "binpack.memory": 1})
    node = node_with(make_node("n").cpu("8").memory("16Gi"), make_pod("a").cpu("2").memory("4Gi"))
    request = make_pod("p").cpu("2").memory("4Gi").model().request
    # cpu (2+2)/8 = 0.5 weighted 3, memory (4+4)/16 = 0.5 weighted 1; pods has no weight
    assert plugin.score_node(request, node) == pytest.approx(0.5)
    request = make_pod("p").cpu("6").memory("4Gi").model().request
    assert plugin.score_node(request, node) == pytest.approx((3 * 1.0 + 1 * 0.5) / 4)


def test_binpack_scores_zero_where_the_pod_overflows_and_ignores_unrequested() -> None:
    plugin = binpack.configure({})
    node = node_with(make_node("n").cpu("4"), make_pod("a").cpu("3"))
    assert plugin.score_node(make_pod("p").cpu("2").model().request, node) == 0.0
    # only memory requested: cpu's use does not count
    only_memory = make_pod("p").memory("16Gi").model().request
    assert plugin.score_node(only_memory, node) == pytest.approx(0.5)
    assert plugin.score_node(Resources({"pods": 1}), node) == 0.0


def test_binpack_weighs_listed_extended_resources() -> None:
    plugin = binpack.configure(
        {"binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 2}
    )
    node = node_with(make_node("n").cpu("8").offers("nvidia.com/gpu", "4"))
    request = make_pod("p").cpu("4").request("nvidia.com/gpu", "1").model().request
    assert plugin.score_node(request, node) == pytest.approx((1 * 0.5 + 2 * 0.25) / 3)


def test_spread_prefers_room() -> None:
    plugin = spread.configure({})
    empty = node_with(make_node("e").cpu("8").memory("8Gi"))
    busy = node_with(make_node("b").cpu("8").memory("8Gi"), make_pod("a").cpu("4").memory("4Gi"))
    request = make_pod("p").cpu("2").memory("2Gi").model().request
    assert plugin.score_node(request, empty) == pytest.approx(0.75)
    assert plugin.score_node(request, busy) == pytest.approx(0.25)
