"""Pods for Lahar's profiles (`lahar`, and `volcano` for Volcano YAML) are scheduled by the real
stock kube-scheduler through the real Lahar extender: binpacked, with Lahar's reasons when they fit
nowhere, and without losing or double-binding a pod when Lahar is killed mid-run."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter

from kubernetes import client as k8s

from extender import devcluster
from extender.api.objects import Pod
from extender.kube import apply_object, pod_when, unschedulable_message, wait_until
from tests.e2e.conftest import (
    NodeFactory,
    PodFactory,
    events,
    extender_tls,
    extender_url,
    lahar_metric,
    restart_lahar,
    scheduled_counts,
)


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


def test_a_pod_that_fits_nowhere_carries_lahars_reason(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    own_nodes(1, cpu="4")
    apply_object(api, pod("filler").cpu("3").build())
    bound_node(api, namespace, "filler")
    apply_object(api, pod("huge").cpu("6").build())
    apply_object(api, pod("big").cpu("3").memory("1Gi").build())

    def unschedulable(name: str) -> str:
        pod = pod_when(api, namespace, name, "to be Unschedulable", unschedulable_message)
        return str(unschedulable_message(pod))

    huge = unschedulable("huge")
    assert "1 Insufficient cpu: requested 6, allocatable 4" in huge
    # big fits the node by capacity, but 3 of its 4 cpus are taken: Lahar says what is free.
    big = unschedulable("big")
    assert "Insufficient cpu: requested 3, free 1" in big


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

    wait_until(  # the scheduler records its events asynchronously, after the binding
        lambda: set(scheduled_counts(api, namespace)) == set(names),
        timeout=30,
        what="a Scheduled event for every pod",
    )
    assert scheduled_counts(api, namespace) == dict.fromkeys(names, 1)
    per_node = Counter(placement.values())
    assert set(per_node) <= set(nodes)
    assert all(count <= 8 for count in per_node.values())
    # The restarted Lahar rebuilt its cache from the API: its view of the nodes is the real one.
    fuller, emptier = sorted(nodes, key=lambda n: -per_node[n])
    probe = pod("probe").cpu("5").build()
    probe["metadata"]["uid"] = "probe"
    body = json.dumps({"Pod": probe, "NodeNames": nodes}).encode()
    request = urllib.request.Request(extender_url(dev_cluster, "/filter"), data=body, method="POST")
    with urllib.request.urlopen(request, timeout=5, context=extender_tls(dev_cluster)) as response:
        reply = json.loads(response.read())
    free = {n: 8 - per_node[n] for n in nodes}
    assert Pod.model_validate(probe).request["cpu"] == 5000
    for node in (fuller, emptier):
        if free[node] >= 5:
            assert node in reply["NodeNames"]
        else:
            assert reply["FailedNodes"][node] == f"Insufficient cpu: requested 5, free {free[node]}"
