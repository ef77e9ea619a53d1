"""The objects the demo submits, as plain manifests (the demo is what a user would apply)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extender.api.scheduling import API_VERSION, GROUP_ANNOTATION

NAMESPACE = "lahar-demo"
Step = Callable[[str], None]  # prints one line of the demo's story


def pod_body(name: str, scheduler: str, cpu: str, group: str = "") -> dict[str, Any]:
    """A pause pod asking for `cpu`; in PodGroup `group` when given."""
    annotations = {GROUP_ANNOTATION: group} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app": "lahar-demo"},
            "annotations": annotations,
        },
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


def pod_group_body(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"minMember": min_member},
    }
