"""Waiting on a pod and reading what the scheduler said about it (plain dicts, as `read` gives).

Used by the demo and the tests: `pod_when` waits until a condition on the pod holds, and its
timeout error shows the pod's status; `unschedulable_message` is the scheduler's reason in the
pod's `PodScheduled=False/Unschedulable` condition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from extender.kube.any_kind import read
from extender.kube.wait import wait_until


def pod_when(
    api: k8s.ApiClient,
    namespace: str,
    name: str,
    what: str,
    ready: Callable[[dict[str, Any]], Any],
    *,
    timeout: float = 60,
) -> dict[str, Any]:
    """Wait until `ready(pod)` is truthy; return that pod. The timeout error shows its status."""

    def check() -> dict[str, Any] | None:
        pod = read(api, "v1", "Pod", name, namespace)
        return pod if pod is not None and ready(pod) else None

    return wait_until(
        check,
        timeout=timeout,
        what=f"pod {namespace}/{name} {what}",
        describe=lambda: str((read(api, "v1", "Pod", name, namespace) or {}).get("status")),
    )


def unschedulable_message(pod: dict[str, Any]) -> str | None:
    """The scheduler's message when it marked the pod Unschedulable, else None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return str(condition["message"])
    return None
