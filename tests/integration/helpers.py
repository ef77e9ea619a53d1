"""Small reads and waits on pods for tests against the dev cluster."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from extender.kube import read, wait_until


def pod_when(
    api: k8s.ApiClient,
    namespace: str,
    name: str,
    what: str,
    ready: Callable[[dict[str, Any]], bool],
    *,
    timeout: float = 60,
) -> dict[str, Any]:
    """Wait until `ready(pod)` holds; return that pod. The timeout error shows the pod's status."""

    def check() -> dict[str, Any] | None:
        pod = read(api, "v1", "Pod", name, namespace)
        return pod if pod is not None and ready(pod) else None

    return wait_until(
        check,
        timeout=timeout,
        what=f"pod {namespace}/{name} {what}",
        describe=lambda: str((read(api, "v1", "Pod", name, namespace) or {}).get("status")),
    )


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", ""))
