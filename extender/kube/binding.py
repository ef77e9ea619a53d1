"""Binding a pod to a node: the `pods/binding` subresource, as kube-scheduler's binder does.

The binding carries the pod's UID, so a pod deleted and re-created under the same name is never
bound by a stale request. Binding is idempotent: if the pod is already bound to that very node (a
retried call), it is a success; bound elsewhere, it is an error saying where.

`evict_pod` asks for a pod's eviction through the Eviction API, so PodDisruptionBudgets are
honoured (a dry run first tells whether they would allow it). `annotate_pod` merge-patches a
pod's annotations: Lahar uses it to have the scheduler retry a parked pod at once (any update
to a pod requeues it), instead of after the periodic flush.
"""

from __future__ import annotations

import json

from kubernetes import client as k8s

from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError, send


def bind_pod(api: k8s.ApiClient, namespace: str, name: str, uid: str, node: str) -> None:
    """Bind `namespace/name` to `node`; raise `KubeError` saying why when it cannot be done."""
    metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
    try:
        send(api, "POST", path, body=body, timeout=(5.0, 20.0)).read()
    except ApiStatusError as error:
        if error.status == 409 and _bound_to(api, namespace, name, uid) == node:
            return
        raise KubeError(f"binding pod {namespace}/{name} to {node}: {error}") from error


def _bound_to(api: k8s.ApiClient, namespace: str, name: str, uid: str) -> str | None:
    try:
        pod = json.loads(send(api, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}").read())
    except KubeError:
        return None
    if uid and pod.get("metadata", {}).get("uid") != uid:
        return None
    return (pod.get("spec") or {}).get("nodeName") or None


def annotate_pod(
    api: k8s.ApiClient, namespace: str, name: str, annotations: dict[str, str]
) -> None:
    """Merge `annotations` into the pod's; raise `KubeError` saying why when it cannot."""
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    body = {"metadata": {"annotations": annotations}}
    try:
        send(api, "PATCH", path, body=body, content_type="application/merge-patch+json").read()
    except ApiStatusError as error:
        raise KubeError(f"annotating pod {namespace}/{name}: {error}") from error


def evict_pod(
    api: k8s.ApiClient, namespace: str, name: str, uid: str, *, dry_run: bool = False
) -> bool:
    """Evict `namespace/name` (only that very pod: its uid is a precondition): True when it was
    (or would be) evicted, False when it is already gone; raise `KubeError` saying why when the
    API refuses (a PodDisruptionBudget answers 429)."""
    options: dict[str, object] = {"preconditions": {"uid": uid}} if uid else {}
    if dry_run:
        options["dryRun"] = ["All"]
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
        "deleteOptions": options,
    }
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
    try:
        send(api, "POST", path, body=body, timeout=(5.0, 20.0)).read()
    except ApiStatusError as error:
        if error.status == 404:
            return False  # already gone: what the eviction wanted
        raise KubeError(f"evicting pod {namespace}/{name}: {error}") from error
    return True
