"""What the extender writes to pods: bindings, lifted scheduling gates, wake-up annotations,
evictions.

A binding is the `pods/binding` subresource, as kube-scheduler's binder creates it. It carries the
pod's UID, so a pod deleted and re-created under the same name is never bound by a stale request.
Binding is idempotent: if the pod is already bound to that very node (a retried call), it is a
success; bound elsewhere, it is an error saying where. A binding call that got no answer (a cut
connection, the API server restarting) is sent again, `BIND_ATTEMPTS` times at most: a gang's
member must not fail its gang for a connection that broke, and a binding that did land answers
the next attempt with 409 and the pod on that node.

`lift_gates` removes the scheduling gates of a pod whose only gates are Lahar's; the patch names
the pod's UID, so it cannot land on a pod re-created under the same name. `annotate_pod`
merge-patches a pod's annotations: Lahar uses it to have the scheduler retry a parked pod at once
(any update to a pod requeues it), instead of after the periodic flush. These three run on the
event loop (`aio.AsyncApi`): they are one per pod, on the scheduling path.

`evict_pod` asks for a pod's eviction through the Eviction API, so PodDisruptionBudgets are
honoured (a dry run first tells whether they would allow it). A pod already gone, or replaced
by one made again under its name (the uid precondition fails), is no eviction refused.
"""

from __future__ import annotations

import asyncio
import json

from kubernetes import client as k8s

from extender.kube.aio import MERGE_PATCH, AsyncApi
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError, send

BIND_ATTEMPTS = 3
BIND_BACKOFF = 0.1  # seconds before the second attempt; three times that before the third


async def bind_pod(api: AsyncApi, namespace: str, name: str, uid: str, node: str) -> None:
    """Bind `namespace/name` to `node`; raise `KubeError` saying why when it cannot be done."""
    metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
    for attempt in range(1, BIND_ATTEMPTS + 1):
        try:
            await api.request("POST", path, body)
            return
        except ApiStatusError as error:
            if error.status == 409 and await _bound_to(api, namespace, name, uid) == node:
                return  # (an earlier attempt of ours made it, its answer lost)
            raise KubeError(f"binding pod {namespace}/{name} to {node}: {error}") from error
        except KubeError as error:  # no answer: a cut connection, the API server restarting
            if attempt == BIND_ATTEMPTS:
                raise KubeError(f"binding pod {namespace}/{name} to {node}: {error}") from error
            await asyncio.sleep(BIND_BACKOFF * 3 ** (attempt - 1))


async def _bound_to(api: AsyncApi, namespace: str, name: str, uid: str) -> str | None:
    try:
        pod = json.loads(await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}"))
    except KubeError:
        return None
    if uid and pod.get("metadata", {}).get("uid") != uid:
        return None
    return (pod.get("spec") or {}).get("nodeName") or None


async def lift_gates(api: AsyncApi, namespace: str, name: str, uid: str) -> None:
    """Remove every scheduling gate of the pod (that very pod: its `uid`, which a patch cannot
    change); raise `KubeError` saying why when it cannot. For a pod whose only gates are Lahar's:
    gates can be removed but never added after creation, so no other gate can appear meanwhile,
    and a JSON merge patch, which the API server applies without the strategic merge's schema
    walk, removes them."""
    body = {"metadata": {"uid": uid}, "spec": {"schedulingGates": None}}
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    try:
        await api.request("PATCH", path, body, content_type=MERGE_PATCH)
    except ApiStatusError as error:
        raise KubeError(f"lifting the gates of pod {namespace}/{name}: {error}") from error


async def annotate_pod(
    api: AsyncApi, namespace: str, name: str, annotations: dict[str, str]
) -> None:
    """Merge `annotations` into the pod's; raise `KubeError` saying why when it cannot."""
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    body = {"metadata": {"annotations": annotations}}
    try:
        await api.request("PATCH", path, body, content_type=MERGE_PATCH)
    except ApiStatusError as error:
        raise KubeError(f"annotating pod {namespace}/{name}: {error}") from error


def evict_pod(
    api: k8s.ApiClient, namespace: str, name: str, uid: str, *, dry_run: bool = False
) -> bool:
    """Evict `namespace/name` (only that very pod: its uid is a precondition): True when it was
    (or would be) evicted, False when it is already gone (also when a pod made again under its
    name, by its Job's controller, has taken its place); raise `KubeError` saying why when the
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
        if error.status == 409 and uid and _replaced(api, namespace, name, uid):
            return False  # (the precondition failed: that very pod is gone)
        raise KubeError(f"evicting pod {namespace}/{name}: {error}") from error
    return True


def _replaced(api: k8s.ApiClient, namespace: str, name: str, uid: str) -> bool:
    """Whether pod `uid` is gone from `namespace/name` (none there, or another pod)."""
    try:
        found = json.loads(send(api, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}").read())
    except ApiStatusError as error:
        return error.status == 404
    return bool((found.get("metadata") or {}).get("uid") != uid)
