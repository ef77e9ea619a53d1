"""What Lahar reports back into the cluster: PodGroup and Queue status, Kubernetes Events, and the
`default` Queue every PodGroup falls back to.

`patch_pod_group_status` merge-patches the `status` subresource of a PodGroup of any kind Lahar
reads (a list such as `conditions` is replaced whole: the writer sends every condition, other
writers' included, as it last saw them; a native PodGroup's conditions are patched by type);
`patch_queue_status` does the same for a Queue, with whatever merge patch it is given, and when
given a resourceVersion only onto that version of the Queue (False: it changed meanwhile);
`patch_hyper_node_status` merge-patches a HyperNode's status (its `nodeCount`) onto that very
HyperNode (False: it is gone, or deleted and made again meanwhile).
`create_queue` answers False when the Queue exists already. `record_event` creates a core/v1 Event
about an object, as `kubectl describe` shows them, from the component `lahar`. Failures raise
`KubeError` naming the object and the server's reason. `pod_group_status` and `condition` read a
PodGroup's status back, as the demo and the tests show it.
"""

from __future__ import annotations

import datetime
from typing import Any

from kubernetes import client as k8s

from extender.api import topology
from extender.api.scheduling import API_VERSION
from extender.kube import writes
from extender.kube.any_kind import read
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError, send

QUEUES = f"/apis/{API_VERSION}/queues"
HYPER_NODES = f"/apis/{topology.API_VERSION}/hypernodes"
COMPONENT = "lahar"


def utc_now() -> str:
    """Now, as Kubernetes writes times (RFC 3339, seconds, UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class NoStatusSubresource(KubeError):
    """The PodGroup exists but its CRD serves no status subresource (Volcano's own CRD: Volcano's
    scheduler writes a PodGroup's status with an update of the whole object)."""


def patch_pod_group_status(
    api: k8s.ApiClient,
    namespace: str,
    name: str,
    status: dict[str, Any],
    uid: str = "",
    *,
    api_version: str = API_VERSION,
    strategic: bool = False,
    on_object: bool = False,
) -> None:
    """Write the status of the PodGroup of `api_version` (Volcano's unless told); with `uid`,
    only onto that very PodGroup (the server refuses the patch when the one of that name now is
    another: deleted and created again meanwhile). `strategic`: a strategic merge patch (a
    built-in kind's conditions merge by type) instead of a merge patch. Where the CRD serves no
    status subresource (Volcano's), the status is patched onto the object itself with
    `on_object`; without, `NoStatusSubresource` says so."""
    path = f"/apis/{api_version}/namespaces/{namespace}/podgroups/{name}"
    body: dict[str, Any] = {"status": status}
    if uid:
        body["metadata"] = {"uid": uid}
    patch = f"application/{'strategic-merge-patch' if strategic else 'merge-patch'}+json"
    what = f"status of PodGroup {namespace}/{name}"
    try:
        send(api, "PATCH", path + "/status", body=body, content_type=patch).read()
        return
    except ApiStatusError as error:
        if error.status != 404 or read(api, api_version, "PodGroup", name, namespace) is None:
            raise KubeError(f"writing {what}: {error}") from error
    if not on_object:
        raise NoStatusSubresource(f"writing {what}: its CRD serves no status subresource")
    try:
        send(api, "PATCH", path, body=body, content_type=patch).read()
    except ApiStatusError as error:
        raise KubeError(f"writing {what} onto the object: {error}") from error


def patch_queue_status(
    api: k8s.ApiClient, name: str, status: dict[str, Any], resource_version: str | None = None
) -> bool:
    """Merge-patch Queue `name`'s status; with `resource_version`, only if the Queue is still at
    that version: False when it is not (someone else wrote it meanwhile), and nothing changed."""
    body: dict[str, Any] = {"status": status}
    if resource_version is not None:
        body["metadata"] = {"resourceVersion": resource_version}
    try:
        send(
            api,
            "PATCH",
            f"{QUEUES}/{name}/status",
            body=body,
            content_type="application/merge-patch+json",
        ).read()
    except ApiStatusError as error:
        if error.status == 409 and resource_version is not None:
            return False
        raise KubeError(f"writing status of Queue {name}: {error}") from error
    return True


def patch_hyper_node_status(
    api: k8s.ApiClient, name: str, status: dict[str, Any], uid: str = ""
) -> bool:
    """Merge-patch HyperNode `name`'s status; with `uid`, only onto that very HyperNode. False
    when it is gone or is another one of that name now, and nothing changed."""
    body: dict[str, Any] = {"status": status}
    if uid:
        body["metadata"] = {"uid": uid}
    try:
        send(
            api,
            "PATCH",
            f"{HYPER_NODES}/{name}/status",
            body=body,
            content_type="application/merge-patch+json",
        ).read()
    except ApiStatusError as error:
        if error.status == 404 or (error.status == 409 and uid):
            return False
        raise KubeError(f"writing status of HyperNode {name}: {error}") from error
    return True


def create_queue(api: k8s.ApiClient, body: dict[str, Any]) -> bool:
    """Create the Queue `body` describes; False when one of that name exists already."""
    return writes.create(api, body)


CLUSTER_EVENTS = "default"  # the namespace of Events about cluster-scoped objects


def record_event(
    api: k8s.ApiClient,
    involved: dict[str, str],
    event_type: str,
    reason: str,
    message: str,
) -> None:
    """An Event about `involved` (apiVersion, kind, namespace, name, uid). One about a
    cluster-scoped object (no namespace: a Queue) goes in namespace `default`, its involved
    object in none, as client-go records it (where `kubectl describe` looks)."""
    namespace, name = involved.get("namespace") or "", involved["name"]
    where = namespace or CLUSTER_EVENTS
    if not namespace:
        involved = {key: value for key, value in involved.items() if key != "namespace"}
    now = utc_now()
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{name}.", "namespace": where},
        "involvedObject": involved,
        "type": event_type,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        send(api, "POST", f"/api/v1/namespaces/{where}/events", body=body).read()
    except ApiStatusError as error:
        what = f"{namespace}/{name}" if namespace else name
        raise KubeError(f"recording event {reason} on {what}: {error}") from error


def pod_group_status(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroup's status as the API shows it ({} while it has none or does not exist)."""
    group = read(api, API_VERSION, "PodGroup", name, namespace) or {}
    status: dict[str, Any] = group.get("status") or {}
    return status


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    """The status's condition of type `kind` ({} when absent)."""
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})
