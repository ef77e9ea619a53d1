"""Reading, listing and deleting any kind of object, as plain dicts.

`read` returns None for an object that does not exist (a value, not an exception); every other
failure is a `KubeError` naming the object and the server's reason. The dynamic client finds each
kind's path (its discovery, cached); `list_objects` then reads the list as plain JSON, because the
dynamic client wraps every field of every item in an object of its own and back: for a list of
thousands of pods that costs seconds of the caller's CPU, which in a test is time the cluster
under test does not get.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client as k8s
from kubernetes.dynamic.exceptions import NotFoundError

from extender.kube import writes
from extender.kube.client import KubeError, api_reason
from extender.kube.manifests import dynamic_resource
from extender.kube.raw import ApiStatusError, send


def read(
    api: k8s.ApiClient, api_version: str, kind: str, name: str, namespace: str | None = None
) -> dict[str, Any] | None:
    if not name:  # (the dynamic client would list the collection instead)
        raise ValueError(f"reading a {kind} needs its name")
    resource, dynamic = dynamic_resource(api, api_version, kind)
    try:
        found: dict[str, Any] = dynamic.get(resource, name=name, namespace=namespace).to_dict()
    except NotFoundError:
        return None
    except k8s.ApiException as exc:
        raise KubeError(f"reading {kind} {name}: {api_reason(exc)}") from exc
    return found


def list_objects(
    api: k8s.ApiClient,
    api_version: str,
    kind: str,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> list[dict[str, Any]]:
    resource, _ = dynamic_resource(api, api_version, kind)
    query = [("labelSelector", label_selector), ("fieldSelector", field_selector)]
    try:
        answer = send(
            api,
            "GET",
            resource.path(namespace=namespace),
            query=[(key, value) for key, value in query if value],
            timeout=(5.0, 120.0),
        )
    except ApiStatusError as exc:
        raise KubeError(f"listing {kind}: {exc}") from exc
    items: list[dict[str, Any]] = json.loads(answer.read()).get("items") or []
    return items


def delete(
    api: k8s.ApiClient, api_version: str, kind: str, name: str, namespace: str | None = None
) -> bool:
    """Delete the object; False when it did not exist."""
    return writes.delete(api, api_version, kind, namespace or "", name)
