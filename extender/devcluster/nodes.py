"""Fake nodes for the dev cluster: plain Node objects that KWOK keeps Ready (no kubelet runs), made
and waited for until they take pods."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from extender.kube import apply_object, connect, list_objects, read, wait_until

FAKE_NODE_LABEL = "lahar.io/fake-node"


LIFECYCLE = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")  # taints of node state


def fake_node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    extended: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A Node with the given allocatable resources (extended resources such as GPUs included)
    and taints of its own."""
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extended or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                FAKE_NODE_LABEL: "true",
                **(labels or {}),
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {"taints": list(taints or [])},
        "status": {"allocatable": resources, "capacity": resources},
    }


def is_schedulable(node: dict[str, Any]) -> bool:
    """Ready, and free of the taints Kubernetes puts on a node until it is (not-ready,
    unreachable, uninitialized). Taints a node was given on purpose do not count."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = (node.get("spec") or {}).get("taints") or []
    return ready and not any(
        t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key", "").startswith(LIFECYCLE)
        for t in taints
    )


def add_ready_nodes(
    api: k8s.ApiClient, names: list[str], *, cpu: str, memory: str, timeout: float
) -> None:
    """Create fake nodes `names` (eight at a time: benchmarks ask for thousands) and wait until
    they are Ready without NoSchedule taints."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in pool.map(lambda n: apply_object(api, fake_node(n, cpu=cpu, memory=memory)), names):
            pass
    shown = ", ".join(names) if len(names) <= 10 else f"{len(names)} nodes ({names[0]}, ...)"
    wait_until(
        lambda: _all_schedulable(api, names),
        timeout=timeout,
        what=f"nodes {shown} to be Ready without NoSchedule taints",
        describe=lambda: _not_ready(api),
        # Each check lists every node: at thousands of them, checking 20 times a second would
        # keep the API server busy serving the check instead of the nodes' updates.
        interval=max(0.05, len(names) / 1000),
    )


def _nodes(api: k8s.ApiClient) -> dict[str, dict[str, Any]]:
    return {node["metadata"]["name"]: node for node in list_objects(api, "v1", "Node")}


def _all_schedulable(api: k8s.ApiClient, names: list[str]) -> bool:
    nodes = _nodes(api)
    return all(name in nodes and is_schedulable(nodes[name]) for name in names)


def _not_ready(api: k8s.ApiClient) -> str:
    """The nodes still tainted, with their taints (ten at most, and how many in all)."""
    tainted = {name: _taints(n) for name, n in _nodes(api).items() if not is_schedulable(n)}
    shown = dict(sorted(tainted.items())[:10])
    return f"{len(tainted)} not schedulable yet, e.g. {shown}"


def _taints(node: dict[str, Any]) -> list[str]:
    return [t["key"] for t in (node.get("spec") or {}).get("taints") or []]


def prepare_workloads(
    kubeconfig: Path, count: int, *, cpu: str, memory: str, timeout: float
) -> None:
    """The dev cluster's `count` fake nodes `kwok-node-<i>`, Ready, and the default namespace's
    ServiceAccount (created by kube-controller-manager), so pods can be created at once."""
    with connect(kubeconfig) as api:
        add_ready_nodes(
            api, [f"kwok-node-{i}" for i in range(count)], cpu=cpu, memory=memory, timeout=timeout
        )
        wait_until(
            lambda: read(api, "v1", "ServiceAccount", "default", "default"),
            timeout=timeout,
            what="the default ServiceAccount (created by kube-controller-manager)",
        )
