"""Pods for Lahar's profiles (`lahar`, and `volcano` for Volcano YAML) are scheduled by the real
stock kube-scheduler through the real Lahar extender: binpacked (in-tree, with the policy's
weights), with the scheduler's reasons when they fit nowhere, and without losing or
double-binding a pod when Lahar is killed mid-run."""

from __future__ import annotations

from collections import Counter

from kubernetes import client as k8s

from extender import devcluster
from extender.kube import apply_object, list_objects, pod_when, unschedulable_message, wait_until
from tests.e2e.conftest import (
    NodeFactory,
    PodFactory,
    events,
    lahar_metric,
    restart_lahar,
    scheduled_counts_of,
)

KINDS = {"nodes": "Node", "pods": "Pod"}  # the cache's kinds, and the API's


def bound_node(api: k8s.ApiClient, namespace: str, name: str) -> str:
    pod = pod_when(api, namespace, name, "to be bound", lambda p: p["spec"].get("nodeName"))
    return str(pod["spec"]["nodeName"])


def test_both_profiles_schedule_through_lahar_and_binpack(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    dev_cluster: devcluster.DevCluster,
) -> None:
    nodes = own_nodes(3, cpu="4")
    binds_before = lahar_metric(dev_cluster, "lahar_binds_total", result="bound")

    placed = []
    for index in range(6):
        scheduler = "lahar" if index % 2 == 0 else "volcano"
        apply_object(api, pod(f"w-{index}", scheduler).cpu("1").build())
        placed.append(bound_node(api, namespace, f"w-{index}"))

    # Binpack: the first four fill one node before a second node is used at all.
    assert len(set(placed[:4])) == 1
    assert placed[4] == placed[5] != placed[0]
    assert set(placed) <= set(nodes)
    assert lahar_metric(dev_cluster, "lahar_binds_total", result="bound") == binds_before + 6
    scheduled = events(api, namespace, reason="Scheduled")
    components = {e["involvedObject"]["name"]: e.get("reportingComponent") for e in scheduled}
    assert components == {f"w-{i}": "lahar" if i % 2 == 0 else "volcano" for i in range(6)}


def test_a_pod_that_fits_nowhere_carries_the_schedulers_reason(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    """Resource fit is kube-scheduler's own (NodeResourcesFit): a pod that fits nowhere says so
    in its words, whether the node is too small or taken."""
    own_nodes(1, cpu="4")
    apply_object(api, pod("filler").cpu("3").build())
    bound_node(api, namespace, "filler")
    apply_object(api, pod("huge").cpu("6").build())
    apply_object(api, pod("big").cpu("3").memory("1Gi").build())

    def unschedulable(name: str) -> str:
        pod = pod_when(api, namespace, name, "to be Unschedulable", unschedulable_message)
        return str(unschedulable_message(pod))

    assert "1 Insufficient cpu" in unschedulable("huge")
    assert "1 Insufficient cpu" in unschedulable("big")


def test_killing_lahar_mid_run_loses_no_pod_and_binds_none_twice(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    dev_cluster: devcluster.DevCluster,
) -> None:
    nodes = own_nodes(2, cpu="8")
    names = [f"p-{i}" for i in range(12)]
    for name in names[:6]:
        apply_object(api, pod(name).cpu("1").build())
    for name in names[:6]:
        bound_node(api, namespace, name)
    # (a pod shows its node once the extender has bound it, a moment before the scheduler has its
    # answer: killed in that moment, the scheduler would never record the pod Scheduled)
    scheduled_counts_of(api, namespace, names[:6])

    dev_cluster.stop_component("lahar", kill=True)
    try:
        for name in names[6:]:
            apply_object(api, pod(name).cpu("1").build())
        wait_until(
            lambda: events(api, namespace, reason="FailedScheduling"),
            timeout=60,
            what="the scheduler to fail a pod while Lahar is down",
        )
    finally:
        restart_lahar(dev_cluster)

    placement = {name: bound_node(api, namespace, name) for name in names}

    assert scheduled_counts_of(api, namespace, names) == dict.fromkeys(names, 1)
    per_node = Counter(placement.values())
    assert set(per_node) <= set(nodes)
    assert all(count <= 8 for count in per_node.values())

    # The restarted Lahar rebuilt its cache from the API: it counts every node and pod there is
    # (within 2: other tests' pods may still be going, and the watch follows a moment later).
    def counts() -> dict[str, tuple[float, int]]:
        return {
            kind: (
                lahar_metric(dev_cluster, "lahar_cache_objects", kind=kind),
                len(list_objects(api, "v1", name)),
            )
            for kind, name in KINDS.items()
        }

    wait_until(
        lambda: all(abs(cached - count) <= 2 for cached, count in counts().values()),
        timeout=30,
        what="the restarted extender's cache to count what the API server lists",
        describe=lambda: f"(cached, listed) per kind: {counts()}",
    )
