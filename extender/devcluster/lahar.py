"""Lahar on the dev cluster: its extender (`lahar serve`) and a second stock kube-scheduler
configured by `policy/kube-scheduler-config.yaml`, the way a user's cluster runs them.

The cluster's own kube-scheduler keeps serving `default-scheduler`; the second one serves the
`lahar` and `volcano` profiles and calls the extender, whose `urlPrefix` is rewritten to the port
the extender got. The extender runs as its own user, granted the ClusterRole of
`manifests/extender-rbac.yaml`, so missing RBAC rules fail the tests as they would fail a user.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from extender.devcluster import configs, health
from extender.devcluster.errors import DevClusterError
from extender.devcluster.pki import EXTENDER_USER
from extender.devcluster.process import ProcessRecord
from extender.kube import apply_object, connect, load_manifests, wait_established

PORTS = ("lahar", "lahar-scheduler")


def install_crds(kubeconfig: Path, manifests: Path, timeout: float) -> None:
    """The PodGroup and Queue CRDs every dev cluster serves, Established before anyone watches."""
    crds = load_manifests(manifests / "crd-scheduling.yaml")
    with connect(kubeconfig) as api:
        for crd in crds:
            apply_object(api, crd.body, source=crd.source)
        wait_established(api, [crd.name for crd in crds], timeout)


def grant_extender_role(kubeconfig: Path, manifests: Path) -> None:
    """The extender's ClusterRole from the manifests, bound to the dev cluster's Lahar user."""
    role = next(
        (m for m in load_manifests(manifests / "extender-rbac.yaml") if m.kind == "ClusterRole"),
        None,
    )
    if role is None:
        raise DevClusterError(f"{manifests / 'extender-rbac.yaml'} has no ClusterRole")
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "lahar-extender-dev-cluster"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role.name,
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": EXTENDER_USER}
        ],
    }
    with connect(kubeconfig) as api:
        apply_object(api, role.body, source=role.source)
        apply_object(api, binding)


def extender_argv(kubeconfig: Path, policy: Path, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "extender.cli.main",
        "serve",
        f"--kubeconfig={kubeconfig}",
        f"--policy={policy}",
        "--host=127.0.0.1",
        f"--port={port}",
    ]


def scheduler_config(policy: Path, kubeconfig: Path, extender_port: int) -> dict[str, Any]:
    """Lahar's KubeSchedulerConfiguration for this cluster: its kubeconfig, the extender's port."""
    config = configs.scheduler_config_for_cluster(configs.load_scheduler_config(policy), kubeconfig)
    extenders = config.get("extenders") or []
    if not extenders:
        raise DevClusterError(f"scheduler config {policy}: field extenders is empty")
    config["extenders"] = [
        {**extender, "urlPrefix": f"http://127.0.0.1:{extender_port}"} for extender in extenders
    ]
    return config


def wait_extender_ready(record: ProcessRecord, port: int, timeout: float) -> None:
    health.wait_healthy(record, f"http://127.0.0.1:{port}/readyz", timeout=timeout)
