"""Which HyperNodes' `status.nodeCount` is stale: the count of nodes under each (directly or
through member HyperNodes, each node once), for those whose written count differs."""

from __future__ import annotations

import pytest

from extender.cache.events import TopologyChanged
from extender.gangs.topology import Topology, stale_node_counts
from tests.builders import HyperNodeBuilder, cluster, make_hyper_node, make_node

NODES = ("n0", "n1", "n2", "n3")


def switch(name: str, *nodes: str) -> HyperNodeBuilder:
    return make_hyper_node(name).tier(1, "switch").nodes(*nodes)


def spine(*switches: str) -> HyperNodeBuilder:
    return make_hyper_node("p0").tier(2, "spine").hyper_nodes(*switches)


def counted(count: int, hyper_node: HyperNodeBuilder) -> HyperNodeBuilder:
    return hyper_node.set("status.nodeCount", count)


@pytest.mark.parametrize(
    ("hyper_nodes", "stale"),
    [
        pytest.param([], {}, id="no-hypernodes"),
        pytest.param(
            [switch("s0", "n0", "n1"), switch("s1", "n2", "n3"), spine("s0", "s1")],
            {"s0": 2, "s1": 2, "p0": 4},
            id="none-written",
        ),
        pytest.param(
            [
                counted(2, switch("s0", "n0", "n1")),
                counted(2, switch("s1", "n2", "n3")),
                counted(4, spine("s0", "s1")),
            ],
            {},
            id="all-written",
        ),
        pytest.param(
            [
                counted(2, switch("s0", "n0", "n1")),
                counted(2, switch("s1", "n2", "n3", "n1")),  # a node added to a switch
                counted(4, spine("s0", "s1")),  # n1 is under both switches: counted once
            ],
            {"s1": 3},
            id="one-moved",
        ),
        pytest.param(
            [counted(5, switch("s0", "n0", "n1", "gone"))],
            {"s0": 2},
            id="missing-node-not-counted",
        ),
        pytest.param(
            [make_hyper_node("s0").tier(1).regex("^n[01]$"), spine("s0", "nowhere")],
            {"s0": 2, "p0": 2},
            id="pattern-and-missing-member",
        ),
        pytest.param(
            [make_hyper_node("s0").tier(1).labelled(rack="a")],
            {"s0": 2},
            id="label-selector",
        ),
        pytest.param(
            [make_hyper_node("s0").tier(1).regex("^x")],
            {"s0": 0},
            id="empty-is-zero",
        ),
    ],
)
def test_stale_node_counts(hyper_nodes: list[HyperNodeBuilder], stale: dict[str, int]) -> None:
    state = cluster([make_node(n).label("rack", "a" if n in ("n0", "n2") else "b") for n in NODES])
    for hyper_node in hyper_nodes:
        state.upsert_hyper_node(hyper_node.model())
    assert stale_node_counts(state.hyper_nodes, Topology.of(state)) == stale


def test_a_status_write_is_no_topology_change_but_a_node_is() -> None:
    state = cluster([make_node(n) for n in NODES])
    state.upsert_hyper_node(switch("s0", "n0", "n1", "n4").model())
    changes: list[int] = []
    state.events.subscribe(TopologyChanged, lambda event: changes.append(state.stamp.topology))
    state.upsert_hyper_node(counted(2, switch("s0", "n0", "n1", "n4")).model())
    assert changes == [] and stale_node_counts(state.hyper_nodes, Topology.of(state)) == {}
    state.upsert_node(make_node("n4").model())
    assert len(changes) == 1
    assert stale_node_counts(state.hyper_nodes, Topology.of(state)) == {"s0": 3}
