"""The demo script: every step prints what happened to which object, with the time it took.

It starts a dev cluster with Lahar (the extender and a kube-scheduler running Lahar's profiles),
submits pods through both profiles (`lahar` and `volcano`) and shows Lahar's binpack placing them
on the fullest node that fits, then a pod that fits nowhere with the reason Lahar gave.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from extender import devcluster
from extender.kube import apply_object, connect, read, wait_until

NAMESPACE = "lahar-demo"
NODE_CPU = "8"
Step = Callable[[str], None]


@dataclass(frozen=True)
class DemoOptions:
    state_dir: Path
    keep: bool = False


def _pod(name: str, scheduler: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "lahar-demo"}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


def run_demo(options: DemoOptions, say: Step = print) -> int:
    started = time.monotonic()

    def step(message: str) -> None:
        say(f"[{time.monotonic() - started:6.1f}s] {message}")

    step("building the control plane from Go modules if it is not cached yet")
    binaries = devcluster.ensure_binaries()
    step(
        f"starting a dev cluster (Kubernetes {binaries.kubernetes_version}, 2 fake nodes of "
        f"{NODE_CPU} cpu) with Lahar: the extender and a stock kube-scheduler calling it"
    )
    cluster_options = devcluster.ClusterOptions(
        state_dir=options.state_dir, node_cpu=NODE_CPU, with_lahar=True
    )
    cluster = devcluster.up(cluster_options, binaries)
    try:
        step(f"cluster ready at {cluster.state.server}")
        with connect(cluster.kubeconfig) as api:
            _namespace(api)
            _show_binpack(api, step)
            _show_unschedulable(api, step)
    finally:
        if options.keep:
            step(f"cluster left running: export KUBECONFIG={cluster.kubeconfig}")
            step(f"stop it with: lahar dev-cluster down --state-dir {options.state_dir}")
        else:
            stopped = cluster.down()
            step(f"dev cluster stopped ({', '.join(stopped)})")
    return 0


def _namespace(api: k8s.ApiClient) -> None:
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", NAMESPACE),
        timeout=60,
        what=f"the default ServiceAccount of namespace {NAMESPACE}",
    )


def _wait_pod(
    api: k8s.ApiClient, name: str, ready: Callable[[dict[str, Any]], Any], what: str
) -> Any:
    def check() -> Any:
        pod = read(api, "v1", "Pod", name, NAMESPACE)
        return ready(pod) if pod else None

    return wait_until(check, timeout=60, what=f"pod {NAMESPACE}/{name} {what}")


def _show_binpack(api: k8s.ApiClient, step: Step) -> None:
    placed: dict[str, str] = {}
    for index in range(6):
        name, scheduler = f"worker-{index}", ("lahar" if index % 2 == 0 else "volcano")
        submitted = time.monotonic()
        apply_object(api, _pod(name, scheduler, cpu="2"))
        node = _wait_pod(api, name, lambda p: p["spec"].get("nodeName"), "to be bound")
        placed[name] = node
        step(
            f"pod {NAMESPACE}/{name} (cpu 2, schedulerName {scheduler}) bound to {node} "
            f"through Lahar {time.monotonic() - submitted:.2f}s after submit"
        )
    for name in placed:
        _wait_pod(api, name, lambda p: (p.get("status") or {}).get("phase") == "Running", "to run")
    per_node: dict[str, list[str]] = {}
    for name, node in placed.items():
        per_node.setdefault(node, []).append(name)
    layout = "; ".join(f"{node}: {', '.join(names)}" for node, names in per_node.items())
    step(f"binpack: every pod went to the fullest node that fit, all Running ({layout})")


def _show_unschedulable(api: k8s.ApiClient, step: Step) -> None:
    name = "too-big"
    apply_object(api, _pod(name, "lahar", cpu="6"))
    step(f"pod {NAMESPACE}/{name} (cpu 6) submitted: more cpu than any node has free")

    def unschedulable(pod: dict[str, Any]) -> str | None:
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return str(condition["message"])
        return None

    message = _wait_pod(api, name, unschedulable, "to be marked Unschedulable")
    step(f"pod {NAMESPACE}/{name} stays Pending; kube-scheduler reports Lahar's reason: {message}")
