"""Fixtures for end-to-end tests: the real stock kube-scheduler with Lahar's profiles, calling the
real Lahar extender, on nodes of the test's own.

The dev cluster's nodes are shared by every test; binpack and capacity expectations need nodes no
other test touches. `own_nodes` creates fake nodes tainted and labelled for the test's namespace,
and `pod` builds pods that tolerate the taint and select those nodes (the in-tree filters narrow
the candidates to them before Lahar is called).
"""

from __future__ import annotations

import contextlib
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from extender import devcluster
from extender.api.scheduling import API_VERSION, QUEUE_ANNOTATION, GroupKind
from extender.devcluster.lahar import wait_ready
from extender.devcluster.nodes import fake_node, is_schedulable
from extender.devcluster.paths import policy_dir
from extender.kube import KubeError, apply_object, delete, list_objects, read, wait_until
from extender.kube.raw import ApiStatusError, send
from tests.builders import PodBuilder, make_pod

TEST_KEY = "lahar.io/e2e"
PodFactory = Callable[..., PodBuilder]  # the `pod` fixture
NodeFactory = Callable[..., list[str]]  # the `own_nodes` fixture


@pytest.fixture
def own_nodes(api: k8s.ApiClient, namespace: str) -> Iterator[NodeFactory]:
    created: list[str] = []

    def make(count: int, *, cpu: str = "8", memory: str = "32Gi") -> list[str]:
        names = [f"{namespace}-n{len(created) + i}" for i in range(count)]
        for name in names:
            taint = {"key": TEST_KEY, "value": namespace, "effect": "NoSchedule"}
            node = fake_node(
                name, cpu=cpu, memory=memory, labels={TEST_KEY: namespace}, taints=[taint]
            )
            apply_object(api, node)
            created.append(name)
        for name in names:
            wait_until(
                lambda name=name: is_schedulable(read(api, "v1", "Node", name) or {}),
                timeout=60,
                what=f"node {name} to be Ready",
            )
        return names

    yield make
    for name in created:
        delete(api, "v1", "Node", name)


@pytest.fixture
def pod(namespace: str) -> PodFactory:
    """`pod("w-0")`: a pod for Lahar's scheduler, on this test's own nodes only."""

    def build(name: str, scheduler: str = "lahar") -> PodBuilder:
        return (
            make_pod(name)
            .ns(namespace)
            .scheduler(scheduler)
            .node_selector(TEST_KEY, namespace)
            .tolerate(TEST_KEY, namespace)
        )

    return build


def extender_url(cluster: devcluster.DevCluster, path: str) -> str:
    """The extender beside Lahar's scheduler, on loopback (plain HTTP, as in its pod)."""
    return f"http://127.0.0.1:{cluster.state.ports['lahar']}{path}"


def wait_explained(cluster: devcluster.DevCluster, gang: str, expected: str) -> str:
    """The extender's explanation of `gang` once it says `expected`.

    A pod is gated by the webhook on admission; the extender's cache sees it a moment later, so
    its explanation is polled rather than read once.
    """
    url = extender_url(cluster, "/debug/explain?" + urllib.parse.urlencode({"gang": gang}))

    def said() -> str | None:
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = "\n".join(json.loads(answer.read())["lines"])
        return text if expected in text else None

    return wait_until(said, timeout=30, what=f"the extender to explain {gang}: {expected!r}")


def metric(url: str, sample: str, context: ssl.SSLContext | None = None, **labels: str) -> float:
    """The value of one sample of the /metrics at `url` (0 when not exported yet)."""
    with urllib.request.urlopen(url, timeout=5, context=context) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == sample and found.labels == labels:
                return float(found.value)
    return 0.0


def lahar_metric(cluster: devcluster.DevCluster, sample: str, **labels: str) -> float:
    """The value of one sample of the running extender's /metrics (0 when not exported yet)."""
    return metric(extender_url(cluster, "/metrics"), sample, **labels)


def restart_lahar(cluster: devcluster.DevCluster) -> None:
    """Start the stopped extender again and wait until its cache is whole (/readyz)."""
    record = cluster.start_component("lahar", die_with_parent=True)
    wait_ready(record, cluster.state.ports["lahar"], timeout=60)


CONTROLLER_LEASE = "lahar-system/lahar-controller"  # (as `lahar_leader` labels it)


def controller_leads(port: int) -> bool:
    """Whether the controller at `port` holds its Lease (`lahar_leader` on its /metrics; a
    standby is ready too, so readiness does not tell)."""
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        return metric(url, "lahar_leader", component="controller", lease=CONTROLLER_LEASE) == 1.0
    except (urllib.error.URLError, OSError):
        return False


def start_as(cluster: devcluster.DevCluster, component: str, argv: list[str]) -> None:
    """Stop the dev cluster's `component` (`lahar`, `lahar-webhook`, `lahar-controller`) and
    start it with `argv`; wait until it is ready (its cache whole) and, the controller, leads."""
    cluster.stop_component(component)
    record = cluster.start_component(component, die_with_parent=True, argv=argv)
    port = cluster.state.ports[component]
    wait_ready(record, port, timeout=60, tls=component == "lahar-webhook")
    if component == "lahar-controller":
        wait_until(lambda: controller_leads(port), timeout=60, what="the controller to lead")


@contextlib.contextmanager
def started_as(
    cluster: devcluster.DevCluster, changes: dict[str, list[str]]
) -> Iterator[dict[str, list[str]]]:
    """The components named in `changes` run with those command lines for the duration, then as
    before (also when starting one failed); yields the command lines they had before."""
    before = {component: cluster.argv_of(component) for component in changes}
    try:
        for component, argv in changes.items():
            assert argv != before[component], f"{component} would start as it runs"
            start_as(cluster, component, argv)
        yield before
    finally:
        for component, argv in before.items():
            if cluster.argv_of(component) != argv or not cluster.is_running(component):
                start_as(cluster, component, argv)


@contextlib.contextmanager
def lahar_policy(cluster: devcluster.DevCluster, policy: Path) -> Iterator[None]:
    """The extender running with `policy` for the duration, then with its own again."""
    shipped = cluster.argv_of("lahar")
    chosen = [f"--policy={policy}" if a.startswith("--policy=") else a for a in shipped]
    with started_as(cluster, {"lahar": chosen}):
        yield


@pytest.fixture
def preempting(dev_cluster: devcluster.DevCluster) -> Iterator[None]:
    """Preemption and reclaim on for the test: the extender runs `policy/preemption.yaml` (the
    shipped `policy/lahar.yaml` evicts nothing, as Volcano's shipped configuration)."""
    with lahar_policy(dev_cluster, policy_dir() / "preemption.yaml"):
        yield


def events(
    api: k8s.ApiClient,
    namespace: str,
    *,
    reason: str | None = None,
    kind: str | None = None,
    name: str | None = None,
) -> list[dict[str, Any]]:
    """The namespace's Events, narrowed by reason and by the kind and name they are about."""
    wanted = {"kind": kind, "name": name}
    return [
        event
        for event in list_objects(api, "v1", "Event", namespace=namespace)
        if reason in (None, event["reason"])
        and all(v is None or event["involvedObject"].get(k) == v for k, v in wanted.items())
    ]


def scheduled_counts(api: k8s.ApiClient, namespace: str) -> Counter[str]:
    """How many times the scheduler reported each pod bound."""
    scheduled = events(api, namespace, reason="Scheduled", kind="Pod")
    return Counter(event["involvedObject"]["name"] for event in scheduled)


def scheduled_counts_of(
    api: k8s.ApiClient, namespace: str, names: Iterable[str], times: int = 1
) -> Counter[str]:
    """`scheduled_counts` once the scheduler has reported each of `names` bound at least `times`
    times: it records its events asynchronously, after the binding, so a look right after the
    pods are bound may see none yet (a pod bound more often still shows as more)."""
    wanted = set(names)

    def recorded() -> Counter[str] | None:
        counts = scheduled_counts(api, namespace)
        return counts if all(counts[name] >= times for name in wanted) else None

    counts: Counter[str] = wait_until(
        recorded,
        timeout=30,
        what=f"the scheduler to report {len(wanted)} pods Scheduled {times} times",
        describe=lambda: str(scheduled_counts(api, namespace)),
    )
    return counts


ClusterObject = Callable[[dict[str, Any]], str]  # the `cluster_object` fixture


@pytest.fixture
def cluster_object(api: k8s.ApiClient) -> Iterator[ClusterObject]:
    """`cluster_object(body)`: apply a cluster-scoped object (a Queue, a PriorityClass) for this
    test, deleted after it, the last made first (a child queue before its parent); its name."""
    made: list[tuple[str, str, str]] = []

    def make(body: dict[str, Any]) -> str:
        apply_object(api, body)
        made.append((body["apiVersion"], body["kind"], body["metadata"]["name"]))
        return str(body["metadata"]["name"])

    yield make
    for api_version, kind, name in reversed(made):
        if kind == "Queue":
            _empty_queue(api, name)
        delete(api, api_version, kind, name)


def _empty_queue(api: k8s.ApiClient, queue: str) -> None:
    """Delete the test's PodGroups in `queue` and wait until the webhook has seen them go (it
    refuses to delete a queue that PodGroups still name)."""
    for group in list_objects(api, API_VERSION, "PodGroup"):
        if (group.get("spec") or {}).get("queue") == queue:
            meta = group["metadata"]
            delete(api, API_VERSION, "PodGroup", meta["name"], meta["namespace"])
    for kind in (GroupKind.COSCHEDULING, GroupKind.NATIVE):  # (queued by annotation)
        try:
            groups = list_objects(api, kind.api_version, "PodGroup")
        except KubeError:  # not served here
            continue
        for group in groups:
            meta = group["metadata"]
            if (meta.get("annotations") or {}).get(QUEUE_ANNOTATION) == queue:
                delete(api, kind.api_version, "PodGroup", meta["name"], meta["namespace"])
    path = f"/apis/{API_VERSION}/queues/{queue}"

    def deletable() -> bool:
        try:
            send(api, "DELETE", path, query=[("dryRun", "All")]).read()
        except ApiStatusError as error:
            return error.status == 404
        return True

    wait_until(deletable, timeout=30, what=f"the webhook to let queue {queue} be deleted")


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
