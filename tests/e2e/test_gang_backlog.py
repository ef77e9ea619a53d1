"""A burst of gangs queued at once: every pod of hundreds of gangs exists before Lahar's
kube-scheduler starts, as when a sweep is submitted while the scheduler is down or restarting.

What went wrong before the gate: kube-scheduler's queue is FIFO, so an admitted gang's members lay
scattered among thousands of other pods; they could not all reach the bind barrier within its
timeout, the gang was released and backed off, its members were queued again, and each pass of
the queue was slower than the last, until nothing bound at all. Now the webhook creates the pods
behind Lahar's gate and Lahar lets gangs in, in fair order, only as many pods at a time as the
scheduler can serve, so each gang's members enter the queue together. The test holds what that
must give, whatever the machine's speed: every pod bound, nothing bound partly, no held gang
released for want of its members, and each pod tried by the scheduler about once. (With the
webhook's pod entry removed, so that the same pods are created without the gate, this backlog
took 5,876 scheduling attempts for its 4,000 pods on the dev cluster, and the test fails.)

The test's own reads stay small beside the cluster's work, on a machine whose cores the API server
and the scheduler share with it: pods are read as plain JSON (`list_objects`), the wait for the
binds lists only the pods still unbound, every 2 s, and the whole namespace once, when none is
left; the wait for the deletion asks for one pod at a time.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from extender import devcluster
from extender.api.scheduling import GANG_GATE
from extender.devcluster import health
from extender.devcluster.lahar import wait_ready
from extender.kube import apply_object, list_objects, wait_until
from extender.kube.raw import send
from tests.builders import make_group
from tests.e2e.conftest import NodeFactory, PodFactory, lahar_metric

GANGS, SIZE = 500, 8  # 4,000 pods, on 40 nodes of 110 pods
POLL = 2.0  # seconds between the test's reads while it waits
UNBOUND = "spec.nodeName="  # the field selector of pods not bound to a node


def test_a_backlog_of_gangs_is_placed_whole_each_pod_tried_once(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    own_nodes(40, cpu="32", memory="256Gi")
    gangs = {f"g{i:03d}": [f"g{i:03d}-{m}" for m in range(SIZE)] for i in range(GANGS)}
    path = f"/api/v1/namespaces/{namespace}/pods"
    # Lahar's scheduler pod goes down: the extender, then the kube-scheduler beside it.
    dev_cluster.stop_component("lahar")
    dev_cluster.stop_component("lahar-scheduler")
    try:
        for gang in gangs:
            apply_object(api, make_group(gang).ns(namespace).min_member(SIZE).build())

        def create(gang_and_name: tuple[str, str]) -> None:
            body = pod(gang_and_name[1]).cpu("10m").memory("16Mi").group(gang_and_name[0])
            _call(api, "POST", path, body=body.build())

        members = [(gang, name) for gang, names in gangs.items() for name in names]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, members))
        pods = list_objects(api, "v1", "Pod", namespace=namespace)
        gated = [p for p in pods if _gates(p) == [GANG_GATE]]
        assert len(gated) == GANGS * SIZE, "the webhook creates every gang pod behind the gate"
    finally:
        _start_scheduler_pod(dev_cluster)

    def unbound() -> list[dict[str, Any]]:
        return list_objects(api, "v1", "Pod", namespace=namespace, field_selector=UNBOUND)

    wait_until(
        lambda: not unbound(),
        timeout=600,
        interval=POLL,
        max_interval=POLL,
        what=f"every pod of {GANGS} gangs of {SIZE} to be bound",
        describe=lambda: f"{len(unbound())} of {GANGS * SIZE} pods unbound",
    )
    pods = list_objects(api, "v1", "Pod", namespace=namespace)
    on = {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")}
    placed = {gang: sum(n in on for n in names) for gang, names in gangs.items()}
    assert all(count == SIZE for count in placed.values()), "every gang is placed whole"
    assert lahar_metric(dev_cluster, "lahar_partial_gangs_total") == 0
    # The extender and its scheduler are new processes: their counters began with the backlog.
    assert lahar_metric(dev_cluster, "lahar_gang_barrier_timeouts_total") == 0
    attempts = _schedule_attempts(dev_cluster)
    assert attempts <= 1.1 * GANGS * SIZE, f"{attempts:.0f} attempts for {GANGS * SIZE} pods"
    _call(api, "DELETE", path, query=[("gracePeriodSeconds", 0)])
    wait_until(
        lambda: not json.loads(_call(api, "GET", path, query=[("limit", 1)]))["items"],
        timeout=300,
        interval=POLL,
        max_interval=POLL,
        what="the backlog's pods to be deleted",
    )


def _call(
    api: k8s.ApiClient,
    method: str,
    path: str,
    *,
    query: list[tuple[str, str | int]] | None = None,
    body: dict[str, Any] | None = None,
) -> bytes:
    """One request, its answer's body read as bytes (a collection delete answers with every
    pod it deleted: up to 90 s to read on a busy machine, nothing decoded)."""
    answer: Any = send(api, method, path, query=query or [], body=body, timeout=(5.0, 90.0))
    return bytes(answer.read())


def _gates(pod: dict[str, object]) -> list[str]:
    spec = pod["spec"]
    assert isinstance(spec, dict)
    return [gate["name"] for gate in spec.get("schedulingGates") or []]


def _start_scheduler_pod(cluster: devcluster.DevCluster) -> None:
    """Start the extender, then its kube-scheduler, and wait until both answer."""
    extender = cluster.start_component("lahar", die_with_parent=True)
    scheduler = cluster.start_component("lahar-scheduler", die_with_parent=True)
    port = cluster.state.ports["lahar-scheduler"]
    health.wait_healthy(scheduler, f"https://127.0.0.1:{port}/healthz", timeout=60)
    wait_ready(extender, cluster.state.ports["lahar"], timeout=60)


def _schedule_attempts(cluster: devcluster.DevCluster) -> float:
    """Lahar's kube-scheduler's `scheduler_schedule_attempts_total`, over results and profiles."""
    url = f"https://127.0.0.1:{cluster.state.ports['lahar-scheduler']}/metrics"
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # its self-signed port
    with urllib.request.urlopen(url, timeout=10, context=context) as answer:
        text = answer.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "scheduler_schedule_attempts"
        for sample in family.samples
        if sample.name.endswith("_total")
    )
