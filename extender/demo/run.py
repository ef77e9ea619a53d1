"""The demo script: every step prints what happened to which object, with the time it took."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster.lifecycle import end_pod
from extender.kube import apply_object, connect, read, wait_until

NAMESPACE = "lahar-demo"


@dataclass(frozen=True)
class DemoOptions:
    state_dir: Path
    keep: bool = False


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "lahar-demo"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


def _phase_of(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "")


def run_demo(options: DemoOptions, say: Callable[[str], None] = print) -> int:
    started = time.monotonic()

    def step(message: str) -> None:
        say(f"[{time.monotonic() - started:6.1f}s] {message}")

    step("building the control plane from Go modules if it is not cached yet")
    binaries = devcluster.ensure_binaries()
    step(f"starting a dev cluster (Kubernetes {binaries.kubernetes_version}, 2 fake nodes)")
    cluster = devcluster.up(devcluster.ClusterOptions(state_dir=options.state_dir), binaries)
    try:
        step(f"cluster ready at {cluster.state.server}")
        with connect(cluster.kubeconfig) as api:
            _show_one_pod(api, step)
    finally:
        if options.keep:
            step(f"cluster left running: export KUBECONFIG={cluster.kubeconfig}")
            step(f"stop it with: lahar dev-cluster down --state-dir {options.state_dir}")
        else:
            stopped = cluster.down()
            step(f"dev cluster stopped ({', '.join(stopped)})")
    return 0


def _show_one_pod(api: k8s.ApiClient, step: Callable[[str], None]) -> None:
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", NAMESPACE),
        timeout=60,
        what=f"the default ServiceAccount of namespace {NAMESPACE}",
    )
    name = "hello"
    submitted = time.monotonic()
    apply_object(api, _pod(name))
    step(f"pod {NAMESPACE}/{name} submitted (cpu 500m, memory 256Mi) to the stock kube-scheduler")

    def get() -> dict[str, Any] | None:
        return read(api, "v1", "Pod", name, NAMESPACE)

    def when(ready: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        return wait_until(
            lambda: pod if (pod := get()) and ready(pod) else None,
            timeout=60,
            what=f"pod {NAMESPACE}/{name} {what}",
        )

    pod = when(lambda p: bool(p["spec"].get("nodeName")), "to be bound")
    node = pod["spec"]["nodeName"]
    step(f"pod {NAMESPACE}/{name} bound to {node} {time.monotonic() - submitted:.2f}s after submit")
    pod = when(lambda p: _phase_of(p) == "Running", "to run")
    step(f"pod {NAMESPACE}/{name} Running on {node} with IP {pod['status'].get('podIP')}")
    end_pod(api, NAMESPACE, name, exit_code=0)
    pod = when(lambda p: _phase_of(p) in ("Succeeded", "Failed"), "to finish")
    statuses = pod["status"].get("containerStatuses") or [{}]
    code = statuses[0].get("state", {}).get("terminated", {}).get("exitCode")
    step(f"pod {NAMESPACE}/{name} {_phase_of(pod)} (exit code {code})")
    step(
        f"summary: pod {NAMESPACE}/{name} was bound to {node} by the stock kube-scheduler, "
        f"ran and ended {_phase_of(pod)} in {time.monotonic() - submitted:.1f}s"
    )
