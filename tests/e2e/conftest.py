"""Fixtures for end-to-end tests: the real stock kube-scheduler with Lahar's profiles, calling the
real Lahar extender, on nodes of the test's own.

The dev cluster's nodes are shared by every test; binpack and capacity expectations need nodes no
other test touches. `own_nodes` creates fake nodes tainted and labelled for the test's namespace,
and `pod` builds pods that tolerate the taint and select those nodes (the in-tree filters narrow
the candidates to them before Lahar is called).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from extender import devcluster
from extender.devcluster.nodes import fake_node, is_schedulable
from extender.kube import apply_object, delete, read, wait_until
from tests.builders import PodBuilder, make_pod

TEST_KEY = "lahar.io/e2e"


@pytest.fixture
def own_nodes(api: k8s.ApiClient, namespace: str) -> Iterator[Callable[..., list[str]]]:
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
def pod(namespace: str) -> Callable[[str], PodBuilder]:
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


def lahar_metric(cluster: devcluster.DevCluster, sample: str, **labels: str) -> float:
    """The value of one sample of the running extender's /metrics (0 when not exported yet)."""
    url = f"http://127.0.0.1:{cluster.state.ports['lahar']}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == sample and found.labels == labels:
                return float(found.value)
    return 0.0


def lahar_ready(cluster: devcluster.DevCluster) -> bool:
    """Whether the running extender answers /readyz with 200 (its cache is whole)."""
    url = f"http://127.0.0.1:{cluster.state.ports['lahar']}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError):
        return False
