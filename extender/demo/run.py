"""The demo script: every step prints what happened to which object, with the time it took.

It starts a dev cluster with Lahar (the extender and a kube-scheduler running Lahar's profiles),
submits pods through both profiles (`lahar` and `volcano`) and shows Lahar's binpack placing them
on the fullest node that fits, then a pod that fits nowhere with the reason Lahar gave, then the
gang story (`demo.gangs`): two jobs that each fit alone, one runs whole, the other waits whole.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s

from extender import devcluster
from extender.demo.gangs import show_gangs
from extender.demo.objects import NAMESPACE, Step, pod_body
from extender.kube import apply_object, connect, pod_when, read, unschedulable_message, wait_until

NODE_CPU = "8"


@dataclass(frozen=True)
class DemoOptions:
    state_dir: Path
    keep: bool = False


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
            show_gangs(api, step)
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


def _show_binpack(api: k8s.ApiClient, step: Step) -> None:
    placed: dict[str, str] = {}
    for index in range(6):
        name, scheduler = f"worker-{index}", ("lahar" if index % 2 == 0 else "volcano")
        submitted = time.monotonic()
        apply_object(api, pod_body(name, scheduler, cpu="2"))
        pod = pod_when(api, NAMESPACE, name, "to be bound", lambda p: p["spec"].get("nodeName"))
        node = placed[name] = pod["spec"]["nodeName"]
        step(
            f"pod {NAMESPACE}/{name} (cpu 2, schedulerName {scheduler}) bound to {node} "
            f"through Lahar {time.monotonic() - submitted:.2f}s after submit"
        )
    for name in placed:
        pod_when(api, NAMESPACE, name, "to run", lambda p: p["status"].get("phase") == "Running")
    per_node: dict[str, list[str]] = {}
    for name, node in placed.items():
        per_node.setdefault(node, []).append(name)
    layout = "; ".join(f"{node}: {', '.join(names)}" for node, names in per_node.items())
    # Binpack fills one node (4 pods of 2 cpu on 8) before it uses the other at all.
    packed = sorted(len(names) for names in per_node.values()) == [2, 4]
    verdict = (
        "binpacked: the first node filled before the second was used"
        if packed
        else ("NOT binpacked as expected")
    )
    step(f"{verdict}; all Running ({layout})")


def _show_unschedulable(api: k8s.ApiClient, step: Step) -> None:
    name = "too-big"
    apply_object(api, pod_body(name, "lahar", cpu="6"))
    step(f"pod {NAMESPACE}/{name} (cpu 6) submitted: more cpu than any node has free")

    pod = pod_when(api, NAMESPACE, name, "to be marked Unschedulable", unschedulable_message)
    message = unschedulable_message(pod)
    step(f"pod {NAMESPACE}/{name} stays Pending; kube-scheduler reports Lahar's reason: {message}")
