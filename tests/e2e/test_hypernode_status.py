"""HyperNodes' `status.nodeCount` (the NodeCount column of `kubectl get hypernodes`), written by
the leading extender as Volcano's controller writes it: the nodes under each HyperNode, directly
or through its members; written again when a switch gains a node.

HyperNodes are cluster-scoped: the test names its own after its namespace.
"""

from __future__ import annotations

from kubernetes import client as k8s

from extender.api.topology import API_VERSION, KIND
from extender.kube import apply_object, read, wait_until
from tests.builders import make_hyper_node
from tests.e2e.conftest import ClusterObject, NodeFactory


def node_counts(api: k8s.ApiClient, names: list[str]) -> dict[str, int | None]:
    return {
        name: ((read(api, API_VERSION, KIND, name) or {}).get("status") or {}).get("nodeCount")
        for name in names
    }


def test_node_counts_are_written_and_follow_a_switch_that_grows(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, cluster_object: ClusterObject
) -> None:
    """Two switches of two nodes under a spine count 2, 2 and 4; a fifth node added to the
    second switch makes it 3 and the spine 5."""
    nodes = own_nodes(5)
    s0, s1, spine = f"{namespace}-s0", f"{namespace}-s1", f"{namespace}-spine"
    cluster_object(make_hyper_node(s0).tier(1, "switch").nodes(*nodes[:2]).build())
    cluster_object(make_hyper_node(s1).tier(1, "switch").nodes(*nodes[2:4]).build())
    cluster_object(make_hyper_node(spine).tier(2, "spine").hyper_nodes(s0, s1).build())
    names = [s0, s1, spine]

    wanted = {s0: 2, s1: 2, spine: 4}
    wait_until(
        lambda: node_counts(api, names) == wanted,
        timeout=30,
        what=f"the HyperNodes' nodeCount {wanted}",
        describe=lambda: f"nodeCount {node_counts(api, names)}",
    )

    apply_object(api, make_hyper_node(s1).tier(1, "switch").nodes(*nodes[2:]).build())
    wanted = {s0: 2, s1: 3, spine: 5}
    wait_until(
        lambda: node_counts(api, names) == wanted,
        timeout=30,
        what=f"the HyperNodes' nodeCount {wanted}",
        describe=lambda: f"nodeCount {node_counts(api, names)}",
    )
