"""Small reads and waits on pods for tests against the dev cluster."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from extender.kube import apply_object, read, wait_until

EXIT_ANNOTATION = "sim.lahar.io/exit-code"


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


def end_pod(api: k8s.ApiClient, namespace: str, name: str, exit_code: int) -> None:
    """Ask KWOK (Lahar's exit stage) to end a running pod with `exit_code`."""
    apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "annotations": {EXIT_ANNOTATION: str(exit_code)},
            },
        },
        field_manager="lahar-tests-exit",
    )
