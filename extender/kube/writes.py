"""Creating, replacing and deleting objects over raw requests: the kinds Lahar writes by a fixed
path, any other kind (deleted by tests and tools) found by discovery.

Each call names the object it touched in its error. Outcomes a caller acts on are values: `create`
answers False when the object exists already (a deterministic name made before a restart), `get`
None and `delete` False when it is gone. Every other failure raises `ApiStatusError` carrying the
HTTP status: 409 on `replace` and `replace_status` is a conflict (the caller re-reads and
retries), 400/422 a body the server refuses (a pod template it finds invalid), which the caller
reports instead of retrying blindly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubernetes import client as k8s

from extender.kube.manifests import dynamic_resource
from extender.kube.raw import ApiStatusError, send

PLURALS = {
    "Pod": "pods",
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "NetworkPolicy": "networkpolicies",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PodGroup": "podgroups",
    "Job": "jobs",
    "Command": "commands",
    "Queue": "queues",
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
    "PodTemplate": "podtemplates",
    "ProvisioningRequest": "provisioningrequests",
}
FIELD_MANAGER = "lahar-controller"


def object_path(api_version: str, kind: str, namespace: str, name: str = "") -> str:
    """The URL path of an object Lahar writes (or, without `name`, of its collection);
    cluster-scoped without a `namespace`."""
    if kind not in PLURALS:
        raise ValueError(f"Lahar writes no objects of kind {kind}")
    group = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    path = f"{group}{scope}/{PLURALS[kind]}"
    return f"{path}/{name}" if name else path


def _any_path(api: k8s.ApiClient, api_version: str, kind: str, namespace: str, name: str) -> str:
    """The path of an object of any kind (kinds Lahar does not write are found by discovery)."""
    if kind in PLURALS:
        return object_path(api_version, kind, namespace, name)
    resource, _ = dynamic_resource(api, api_version, kind)
    path: str = resource.path(name=name, namespace=namespace or None)
    return path


def _named(kind: object, namespace: object, name: object) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _describe(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata") or {}
    return _named(body.get("kind"), meta.get("namespace"), meta.get("name"))


def _fail(what: str, error: ApiStatusError) -> ApiStatusError:
    return ApiStatusError(f"{what}: {error}", error.status, error.fields)


def create(api: k8s.ApiClient, body: Mapping[str, Any]) -> bool:
    """Create `body`; False when an object of that name exists already."""
    path = object_path(body["apiVersion"], body["kind"], body["metadata"].get("namespace", ""))
    try:
        send(api, "POST", path, body=dict(body)).read()
    except ApiStatusError as error:
        if error.status == 409:
            return False
        raise _fail(f"creating {_describe(body)}", error) from error
    return True


def get(
    api: k8s.ApiClient, api_version: str, kind: str, namespace: str, name: str
) -> dict[str, Any] | None:
    """The object as stored, or None when there is none."""
    try:
        found: dict[str, Any] = json.loads(
            send(api, "GET", object_path(api_version, kind, namespace, name)).read()
        )
    except ApiStatusError as error:
        if error.status == 404:
            return None
        raise _fail(f"reading {_named(kind, namespace, name)}", error) from error
    return found


def replace(api: k8s.ApiClient, body: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the object (its metadata.resourceVersion is the precondition: 409 when it changed
    since it was read); return it as stored."""
    meta = body["metadata"]
    path = object_path(body["apiVersion"], body["kind"], meta.get("namespace", ""), meta["name"])
    try:
        stored: dict[str, Any] = json.loads(send(api, "PUT", path, body=dict(body)).read())
    except ApiStatusError as error:
        raise _fail(f"replacing {_describe(body)}", error) from error
    return stored


def apply(
    api: k8s.ApiClient, body: Mapping[str, Any], *, manager: str = FIELD_MANAGER, force: bool = True
) -> None:
    """Server-side apply `body` as `manager` (the controller by default, which owns every field it
    sets: forced). Not forced, a field another manager set differently is a 409."""
    meta = body["metadata"]
    path = object_path(body["apiVersion"], body["kind"], meta["namespace"], meta["name"])
    query = [("fieldManager", manager), *([("force", "true")] if force else [])]
    try:
        send(
            api,
            "PATCH",
            path,
            query=query,
            body=dict(body),
            content_type="application/apply-patch+yaml",  # JSON is YAML
        ).read()
    except ApiStatusError as error:
        raise _fail(f"applying {_describe(body)}", error) from error


def replace_status(api: k8s.ApiClient, body: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the object's status (its metadata.resourceVersion is the precondition: 409 when
    the object changed since it was read); return the object as stored."""
    meta = body["metadata"]
    path = object_path(body["apiVersion"], body["kind"], meta["namespace"], meta["name"])
    try:
        stored: dict[str, Any] = json.loads(
            send(api, "PUT", path + "/status", body=dict(body)).read()
        )
    except ApiStatusError as error:
        raise _fail(f"writing status of {_describe(body)}", error) from error
    return stored


def delete(
    api: k8s.ApiClient,
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    *,
    uid: str = "",
    resource_version: str = "",
    grace_seconds: int | None = None,
    propagation: str = "Background",
) -> bool:
    """Delete the object (only that very one when `uid` is given, and only as it was at
    `resource_version` when that is given) and, by garbage collection, its dependents: in the
    background, or first (`Foreground`: the object stays until they are gone); False when it is
    gone already, or (with a precondition) another object or a changed one is there."""
    if not name:  # (the path would be the collection's: a DELETE there removes every object)
        raise ValueError(f"deleting a {kind} needs its name")
    options: dict[str, Any] = {"propagationPolicy": propagation}
    preconditions = {
        key: value for key, value in (("uid", uid), ("resourceVersion", resource_version)) if value
    }
    if preconditions:
        options["preconditions"] = preconditions
    if grace_seconds is not None:
        options["gracePeriodSeconds"] = grace_seconds
    path = _any_path(api, api_version, kind, namespace, name)
    try:
        send(api, "DELETE", path, body=options).read()
    except ApiStatusError as error:
        if error.status == 404 or (error.status == 409 and preconditions):  # gone, or changed
            return False
        raise _fail(
            f"deleting {kind} {namespace + '/' if namespace else ''}{name}", error
        ) from error
    return True
