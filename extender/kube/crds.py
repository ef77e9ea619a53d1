"""Waiting for CustomResourceDefinitions to serve their kinds.

The same concept one layer down: `api.crds`, Lahar's CRDs as its models make them; a CRD applied
serves its kind only once Established, which `wait_established` waits for.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubernetes import client as k8s

from extender.kube.any_kind import read
from extender.kube.wait import wait_until


def is_established(api: k8s.ApiClient, name: str) -> bool:
    crd = read(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name) or {}
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def wait_established(api: k8s.ApiClient, names: Iterable[str], timeout: float) -> None:
    """Wait until every named CRD is Established; a broken structural schema never gets there."""
    pending = list(names)
    wait_until(
        lambda: all(is_established(api, name) for name in pending),
        timeout=timeout,
        what=f"CRDs {', '.join(pending)} to be Established",
    )
