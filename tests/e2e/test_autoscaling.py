"""Gangs in an autoscaled cluster, with Lahar's scheduler on the real control plane and an
autoscaler that adds KWOK nodes (`tests.autoscaler.provisioner`: a stand-in for Cluster
Autoscaler that speaks only its public API).

A queue whose scale-up mode is `provisioningRequest` has a gang that fits it but not the cluster
ask for all of its nodes with one ProvisioningRequest, and bind whole once they exist; the pool
at its maximum leaves the next gang waiting whole, saying why; a gang its queue refuses asks for
nothing; a gang deleted takes its request with it; a restarted extender makes no second request.
A queue whose mode is `unschedulable` lets the gang's pods be marked Unschedulable, so the
autoscaler adds nodes pod by pod, and the gang still binds whole only once all of it fits.

With `LAHAR_CLUSTER_AUTOSCALER` naming a Cluster Autoscaler binary built with its kwok provider,
the same tests run against it instead of the stand-in (`tests.autoscaler.cluster_autoscaler`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.provisioning import API_VERSION, CONSUME_ANNOTATION
from extender.api.scale_up import SCALE_UP_ANNOTATION
from extender.api.scheduling import API_VERSION as SCHEDULING_API
from extender.devcluster.nodes import fake_node
from extender.kube import condition, delete, list_objects, read, wait_until
from extender.kube.reports import pod_group_status
from tests.autoscaler.cluster_autoscaler import ClusterAutoscaler, binary
from tests.autoscaler.provisioner import NodePool, Provisioner
from tests.builders import make_job, make_queue
from tests.e2e.conftest import (
    TEST_KEY,
    ClusterObject,
    NodeFactory,
    PodFactory,
    events,
    restart_lahar,
)
from tests.e2e.gangs import BindTimeline, bound, submit_gang, wait_bound
from tests.e2e.jobs import submit

CPU = "4"  # every member, and the test's own nodes: one member per node
# The nodes the autoscaler adds: a member and the kube-proxy pod Cluster Autoscaler's kwok
# provider counts on every new node (100m), still one member per node.
POOL_CPU = "4100m"


class Autoscaler(Protocol):
    """The stand-in, or the real Cluster Autoscaler (`tests.autoscaler.cluster_autoscaler`)."""

    @property
    def nodes(self) -> list[str]: ...

    def __enter__(self) -> Autoscaler: ...

    def __exit__(self, *exc: object) -> None: ...


ScaleUp = Callable[..., Autoscaler]  # the `autoscaler` fixture


@pytest.fixture
def autoscaler(api: k8s.ApiClient, namespace: str, kubeconfig: Path, tmp_path: Path) -> ScaleUp:
    """`autoscaler(max_nodes=6, delay=2)`: an autoscaler adding nodes only this test's pods may
    use: the stand-in, or the real Cluster Autoscaler when `$LAHAR_CLUSTER_AUTOSCALER` names
    its binary (its log in the test's tmp_path)."""

    def template(name: str) -> dict[str, Any]:
        taint = {"key": TEST_KEY, "value": namespace, "effect": "NoSchedule"}
        labels = {TEST_KEY: namespace}
        return fake_node(name, cpu=POOL_CPU, memory="16Gi", labels=labels, taints=[taint])

    def make(*, max_nodes: int, delay: float = 2.0) -> Autoscaler:
        pool = NodePool(template, max_nodes, delay)
        if binary() is not None:
            log = tmp_path / "cluster-autoscaler.log"
            return ClusterAutoscaler(api, kubeconfig, namespace, pool, log=log)
        return Provisioner(api, namespace, pool)

    return make


def scaled_queue(make: ClusterObject, namespace: str, mode: str, **capability: str) -> str:
    queue = make_queue(f"{namespace}-q").annotate(SCALE_UP_ANNOTATION, mode)
    return make((queue.capability(**capability) if capability else queue).build())


def requests(api: k8s.ApiClient, namespace: str) -> list[dict[str, Any]]:
    return list_objects(api, API_VERSION, "ProvisioningRequest", namespace=namespace)


def says(api: k8s.ApiClient, namespace: str, gang: str, *words: str) -> Callable[[], str | None]:
    """A check: the message of the gang's Unschedulable condition, once it says all `words`."""

    def check() -> str | None:
        status = pod_group_status(api, namespace, gang)
        message = str(condition(status, "Unschedulable").get("message", ""))
        return message if all(word in message for word in words) else None

    return check


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def first_bound_after_last_node(api: k8s.ApiClient, namespace: str, nodes: list[str]) -> None:
    """No member was bound before every node the autoscaler added existed (the API's second
    resolution: node creation against each pod's PodScheduled transition)."""
    made = [
        stamp((read(api, "v1", "Node", n) or {})["metadata"]["creationTimestamp"]) for n in nodes
    ]
    pods = list_objects(api, "v1", "Pod", namespace=namespace)
    placed = [stamp(condition(p["status"], "PodScheduled")["lastTransitionTime"]) for p in pods]
    assert min(placed) >= max(made), "a member was bound before all the nodes existed"


def test_a_gang_that_does_not_fit_asks_for_all_of_its_nodes_at_once(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
    *,
    autoscaler: ScaleUp,
) -> None:
    own_nodes(2, cpu=CPU)
    queue = scaled_queue(cluster_object, namespace, "provisioningRequest")
    with autoscaler(max_nodes=6) as scaler, BindTimeline(api, namespace) as bindings:
        names = submit_gang(api, namespace, pod, "big", 8, cpu=CPU, queue=queue)
        [made] = wait_until(lambda: requests(api, namespace), timeout=60, what="its request")
        wait_bound(api, namespace, names, 8, "the gang bound whole on the nodes it asked for")
        assert len(scaler.nodes) == 6
        first_bound_after_last_node(api, namespace, scaler.nodes)
    assert made["metadata"]["name"] == "big-1"
    assert sum(s["count"] for s in made["spec"]["podSets"]) == 8
    assert bindings.partial() == []
    consumed = {
        p["metadata"]["annotations"].get(CONSUME_ANNOTATION) for p in pods_of(api, namespace)
    }
    assert consumed == {"big-1"}
    wait_until(lambda: not requests(api, namespace), timeout=30, what="the request deleted")


def pods_of(api: k8s.ApiClient, namespace: str) -> list[dict[str, Any]]:
    return list_objects(api, "v1", "Pod", namespace=namespace)


def test_at_the_pools_maximum_the_next_gang_waits_whole_and_says_why(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
    *,
    autoscaler: ScaleUp,
) -> None:
    own_nodes(2, cpu=CPU)
    queue = scaled_queue(cluster_object, namespace, "provisioningRequest")
    with autoscaler(max_nodes=6, delay=1) as scaler:
        first = submit_gang(api, namespace, pod, "a", 8, cpu=CPU, queue=queue)
        wait_bound(api, namespace, first, 8, "the first gang bound on 6 new nodes")
        second = submit_gang(api, namespace, pod, "b", 4, cpu=CPU, queue=queue)
        message = wait_until(
            says(
                api,
                namespace,
                "b",
                f"ProvisioningRequest {namespace}/b-1 Accepted",
                "CapacityIsNotFound",
            ),
            timeout=60,
            what="gang b to say the autoscaler found no capacity",
        )
        print(message)
        assert bound(api, namespace, second) == []
        assert len(scaler.nodes) == 6


def test_a_gang_over_its_queues_capability_asks_for_nothing(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
    *,
    autoscaler: ScaleUp,
) -> None:
    own_nodes(1, cpu=CPU)
    queue = scaled_queue(cluster_object, namespace, "provisioningRequest", cpu="8")
    with autoscaler(max_nodes=6) as scaler:
        submit_gang(api, namespace, pod, "capped", 4, cpu=CPU, queue=queue)
        message = wait_until(
            says(api, namespace, "capped", "no nodes are asked for", "QueueCapability"),
            timeout=60,
            what="the capped gang to say why it asks for no nodes",
        )
        print(message)
        assert requests(api, namespace) == []
        assert scaler.nodes == []


def test_a_gang_deleted_while_its_request_is_pending_takes_the_request_with_it(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    own_nodes(1, cpu=CPU)
    queue = scaled_queue(cluster_object, namespace, "provisioningRequest")
    names = submit_gang(api, namespace, pod, "gone", 3, cpu=CPU, queue=queue)
    wait_until(lambda: requests(api, namespace), timeout=60, what="the gang's request")
    delete(api, SCHEDULING_API, "PodGroup", "gone", namespace)
    for name in names:
        delete(api, "v1", "Pod", name, namespace)
    wait_until(lambda: not requests(api, namespace), timeout=60, what="the request deleted")


def test_a_restarted_extender_makes_no_second_request_and_admits_on_provisioned(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
    *,
    dev_cluster: devcluster.DevCluster,
    autoscaler: ScaleUp,
) -> None:
    own_nodes(1, cpu=CPU)
    queue = scaled_queue(cluster_object, namespace, "provisioningRequest")
    names = submit_gang(api, namespace, pod, "kept", 3, cpu=CPU, queue=queue)
    [before] = wait_until(lambda: requests(api, namespace), timeout=60, what="the gang's request")
    dev_cluster.stop_component("lahar", kill=True)
    restart_lahar(dev_cluster)
    uid = before["metadata"]["uid"]
    deadline = time.monotonic() + 8  # (more than a pass of the restarted provisioner)
    while time.monotonic() < deadline:
        assert [r["metadata"]["uid"] for r in requests(api, namespace)] == [uid]
        time.sleep(0.5)
    with autoscaler(max_nodes=2) as scaler:
        wait_bound(api, namespace, names, 3, "the gang bound on the nodes its request got")
        assert len(scaler.nodes) == 2


def test_an_unschedulable_queues_gang_is_seen_pod_by_pod_and_bound_whole(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
    *,
    autoscaler: ScaleUp,
) -> None:
    own_nodes(1, cpu=CPU)
    queue = scaled_queue(cluster_object, namespace, "unschedulable")
    with autoscaler(max_nodes=3, delay=3) as scaler, BindTimeline(api, namespace) as bindings:
        names = submit_gang(api, namespace, pod, "seen", 4, cpu=CPU, queue=queue)
        wait_bound(api, namespace, names, 4, "the gang bound whole once all of it fits")
        assert len(scaler.nodes) == 3  # one for each member the first node had no room for
        first_bound_after_last_node(api, namespace, scaler.nodes)
    refused = {
        event["involvedObject"]["name"]
        for event in events(api, namespace, reason="FailedScheduling", kind="Pod")
        if f"gang {namespace}/seen:" in event["message"]
    }
    assert refused, "no member was tried and refused: the autoscaler could not have seen them"
    assert requests(api, namespace) == []
    assert bindings.partial() == []


@pytest.fixture(autouse=True)
def _no_nodes_left(api: k8s.ApiClient, namespace: str) -> Iterator[None]:
    """The autoscaler's nodes go with the test (after the test's own nodes went: this fixture
    is set up first, so it ends last)."""
    yield
    left = list_objects(api, "v1", "Node", label_selector=f"{TEST_KEY}={namespace}")
    assert [node["metadata"]["name"] for node in left] == []


def test_an_unschedulable_queues_job_is_shown_by_its_pod_group_and_bound_whole(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    cluster_object: ClusterObject,
    *,
    autoscaler: ScaleUp,
) -> None:
    """A Volcano Job's pods are created only once its PodGroup leaves Pending: for a gang that
    waits for nodes in an `unschedulable` queue, Lahar writes it Inqueue (still Unschedulable,
    saying what it lacks), so that the Job's controller creates the pods and the autoscaler sees
    them refused."""
    own_nodes(1, cpu=CPU)
    queue = scaled_queue(cluster_object, namespace, "unschedulable")
    job = make_job("seen").ns(namespace).queue(queue).task("w", 4, cpu=CPU, scheduler="lahar")
    names = [f"seen-w-{index}" for index in range(4)]
    with autoscaler(max_nodes=3, delay=3) as scaler, BindTimeline(api, namespace) as bindings:
        submit(api, job.min_available(4).pinned(TEST_KEY, namespace).build())
        wait_bound(api, namespace, names, 4, "the job's gang bound whole once all of it fits")
        assert len(scaler.nodes) == 3
        first_bound_after_last_node(api, namespace, scaler.nodes)
    refused = {
        event["involvedObject"]["name"]
        for event in events(api, namespace, reason="FailedScheduling", kind="Pod")
        if "gang" in event["message"]
    }
    assert refused, "no member was tried and refused: the autoscaler could not have seen them"
    assert bindings.partial() == []
