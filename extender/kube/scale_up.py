"""What the extender writes to ask an autoscaler for a gang's nodes: PodTemplates and
ProvisioningRequests created and deleted, a member read to make its set's template, and the
annotations that tie the gang's pods to the request.

Asynchronous, on the event loop (`aio.AsyncApi`), as the extender's other writes. Outcomes a
caller acts on are values: `create` answers False when the object exists already (a name made
before a restart), `delete` False and `read_pod` None when it is gone. Every other failure raises
`ApiStatusError` (its `status` 404 on a create: the cluster does not serve the kind) or
`KubeError`, naming the object.

The same concept at other layers: `api.scale_up`, the modes' names, below; `gangs.scale_up` (which
gangs want nodes) and `gangs.provisioning` (the plan these writes carry out), above.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from extender.kube.aio import MERGE_PATCH, AsyncApi
from extender.kube.raw import ApiStatusError
from extender.kube.writes import object_path


def _name(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata") or {}
    return f"{body.get('kind')} {meta.get('namespace')}/{meta.get('name')}"


async def create(api: AsyncApi, body: Mapping[str, Any]) -> bool:
    """Create `body` (a PodTemplate or a ProvisioningRequest); False when one of that name
    exists already."""
    path = object_path(body["apiVersion"], body["kind"], body["metadata"]["namespace"])
    try:
        await api.request("POST", path, dict(body))
    except ApiStatusError as error:
        if error.status == 409:
            return False
        raise ApiStatusError(f"creating {_name(body)}: {error}", error.status) from error
    return True


async def delete(
    api: AsyncApi, api_version: str, kind: str, namespace: str, name: str, *, uid: str = ""
) -> bool:
    """Delete the object (only that very one when `uid` is given), its dependents in the
    background; False when it is gone already."""
    options: dict[str, Any] = {"propagationPolicy": "Background"}
    if uid:
        options["preconditions"] = {"uid": uid}
    try:
        await api.request("DELETE", object_path(api_version, kind, namespace, name), options)
    except ApiStatusError as error:
        if error.status in (404, 409):  # gone, or another object of that name now
            return False
        raise ApiStatusError(
            f"deleting {kind} {namespace}/{name}: {error}", error.status
        ) from error
    return True


async def read_pod(api: AsyncApi, namespace: str, name: str) -> dict[str, Any] | None:
    """The pod as the API server has it; None when it is gone."""
    try:
        body = await api.request("GET", object_path("v1", "Pod", namespace, name))
    except ApiStatusError as error:
        if error.status == 404:
            return None
        raise
    pod: dict[str, Any] = json.loads(body)
    return pod


async def set_annotations(
    api: AsyncApi, namespace: str, name: str, annotations: Mapping[str, str | None]
) -> None:
    """Merge `annotations` into the pod's (a None value removes that key)."""
    body = {"metadata": {"annotations": dict(annotations)}}
    path = object_path("v1", "Pod", namespace, name)
    await api.request("PATCH", path, body, content_type=MERGE_PATCH)
