"""Fake nodes for the dev cluster: plain Node objects that KWOK keeps Ready (no kubelet runs), made
and waited for until they take pods.

Asked for, the nodes sit in a network: `network_labels` puts them in switches and the switches in
spines, in contiguous blocks (the first nodes in `s0`, the next in `s1`, ...; the first switches in
`p0`), as even as the counts allow, by the labels `topology.lahar.io/switch` and
`topology.lahar.io/spine`. When the cluster serves Volcano's HyperNode, the HyperNodes those labels
describe are made by the same builder as `lahar hypernodes build --apply` (`api.topology_labels`),
so a network topology can be tried locally; without the kind the labels alone are there.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from extender.api.objects import Node
from extender.api.topology_labels import build, label_tiers, manifest
from extender.devcluster.errors import DevClusterError
from extender.kube import apply_object, connect, list_objects, read, wait_until
from extender.kube.hyper_nodes import serves_hyper_nodes, sync_hyper_nodes

FAKE_NODE_LABEL = "lahar.io/fake-node"
SWITCH_LABEL = "topology.lahar.io/switch"
SPINE_LABEL = "topology.lahar.io/spine"


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


def network_labels(count: int, switches: int, spines: int = 0) -> list[dict[str, str]]:
    """Each of `count` nodes' switch (and spine) labels: node i in switch `i * switches // count`,
    switch j in spine `j * spines // switches` (contiguous blocks, sizes differing by one at
    most); no labels without switches. A ValueError names the flag and why."""
    if switches < 0 or spines < 0:
        raise ValueError(f"--{'switches' if switches < 0 else 'spines'}: must not be negative")
    if spines and not switches:
        raise ValueError("--spines: needs --switches (spines hold switches)")
    if switches > count:
        raise ValueError(
            f"--switches: {switches} switches for {count} nodes (one node each at least)"
        )
    if spines > switches:
        raise ValueError(
            f"--spines: {spines} spines for {switches} switches (one switch each at least)"
        )
    if not switches:
        return [{} for _ in range(count)]
    labels = []
    for index in range(count):
        switch = index * switches // count
        labels.append(
            {SWITCH_LABEL: f"s{switch}"}
            | ({SPINE_LABEL: f"p{switch * spines // switches}"} if spines else {})
        )
    return labels


def make_hyper_nodes(api: k8s.ApiClient, *, spines: bool) -> int | None:
    """The HyperNodes the nodes' switch (and spine) labels describe, written; how many, or None
    when the cluster serves no HyperNode."""
    if not serves_hyper_nodes(api):
        return None
    tiers = label_tiers([SWITCH_LABEL, SPINE_LABEL], ["switch", "spine"])[: 2 if spines else 1]
    nodes = [Node.model_validate(n) for n in list_objects(api, "v1", "Node")]
    built = build(tiers, nodes)
    if built.conflicts:  # (the dev cluster's own blocks never conflict; a user relabelled)
        raise DevClusterError("; ".join(str(c) for c in built.conflicts))
    sync_hyper_nodes(api, [manifest(h) for h in built.hyper_nodes])
    return len(built.hyper_nodes)


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
    api: k8s.ApiClient,
    names: list[str],
    *,
    cpu: str,
    memory: str,
    timeout: float,
    labels: Sequence[dict[str, str]] = (),
) -> None:
    """Create fake nodes `names` (eight at a time: benchmarks ask for thousands), each with its
    `labels` when given, and wait until they are Ready without NoSchedule taints."""
    own = list(labels) or [{} for _ in names]

    def make(index: int) -> None:
        node = fake_node(names[index], cpu=cpu, memory=memory, labels=own[index])
        apply_object(api, node)

    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in pool.map(make, range(len(names))):
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
    kubeconfig: Path,
    count: int,
    *,
    cpu: str,
    memory: str,
    timeout: float,
    switches: int = 0,
    spines: int = 0,
) -> None:
    """The dev cluster's `count` fake nodes `kwok-node-<i>`, Ready (in `switches` switches and
    `spines` spines when asked, with their HyperNodes when the cluster serves the kind), and the
    default namespace's ServiceAccount (created by kube-controller-manager), so pods can be
    created at once."""
    labels = network_labels(count, switches, spines)
    with connect(kubeconfig) as api:
        add_ready_nodes(
            api,
            [f"kwok-node-{i}" for i in range(count)],
            cpu=cpu,
            memory=memory,
            timeout=timeout,
            labels=labels,
        )
        if switches:
            make_hyper_nodes(api, spines=bool(spines))
        wait_until(
            lambda: read(api, "v1", "ServiceAccount", "default", "default"),
            timeout=timeout,
            what="the default ServiceAccount (created by kube-controller-manager)",
        )
