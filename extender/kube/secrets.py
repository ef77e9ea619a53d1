"""Secrets Lahar keeps its own certificates in: read decoded, replaced at the version read (a
writer that loses a race reads again), and `settle`d: brought to the fixed point of a step
function, so replicas racing to fill or rotate one Secret all end up using what one of them
wrote."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from extender.kube import writes
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError

Step = Callable[[dict[str, bytes] | None], dict[str, bytes] | None]


def decoded(value: object) -> bytes | None:
    """Base64 as Kubernetes writes it in Secrets and caBundles; None when it is not."""
    if not isinstance(value, str | bytes):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:  # binascii.Error
        return None


def secret_data(secret: dict[str, Any]) -> dict[str, bytes]:
    """The Secret's data, decoded (a key that is not base64 is left out)."""
    values = {key: decoded(value) for key, value in (secret.get("data") or {}).items()}
    return {key: value for key, value in values.items() if value is not None}


def write_secret(
    api: k8s.ApiClient,
    namespace: str,
    name: str,
    data: dict[str, bytes],
    *,
    stored: dict[str, Any] | None,
    labels: dict[str, str],
) -> bool:
    """Replace the data of the Secret as it was read (`stored`, at its resourceVersion; its type,
    labels and annotations kept), or create it when there was none; False when another writer got
    there first (it changed, or it exists now): read it again."""
    body = _new_secret(namespace, name, data, labels)
    if stored is None:
        return writes.create(api, body)
    body = {**stored, "apiVersion": "v1", "kind": "Secret", "data": body["data"]}
    try:
        writes.replace(api, body)
    except ApiStatusError as error:
        if error.status == 409:
            return False
        raise
    return True


def apply_new_secret(
    api: k8s.ApiClient,
    namespace: str,
    name: str,
    data: dict[str, bytes],
    *,
    labels: dict[str, str],
    manager: str,
) -> bool:
    """Create the Secret by a server-side apply that is not forced, as `manager`: authorized as
    `create` of that one name (so RBAC can name it), and False when another manager's data is
    already there (409: another writer created it first; read it)."""
    try:
        writes.apply(api, _new_secret(namespace, name, data, labels), manager=manager, force=False)
    except ApiStatusError as error:
        if error.status == 409:
            return False
        if error.status == 403:
            hint = " (the RBAC must allow create and patch of it)"
            raise ApiStatusError(f"{error}{hint}", error.status, error.fields) from error
        raise
    return True


def _new_secret(
    namespace: str, name: str, data: dict[str, bytes], labels: dict[str, str]
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }


def settle(
    api: k8s.ApiClient, namespace: str, name: str, step: Step, *, labels: dict[str, str]
) -> tuple[dict[str, bytes], bool]:
    """The Secret's data once `step` has nothing more to do for it now: `step(data)` (None when
    there is no Secret) returns the data to store, or None when what is stored is right. Returns
    the data and whether this call wrote it; a conflict reads again, five times at most."""
    for _ in range(5):
        secret = writes.get(api, "v1", "Secret", namespace, name)
        stored = secret_data(secret) if secret is not None else None
        following = step(stored)
        if following is None:
            if stored is None:
                raise KubeError(f"Secret {namespace}/{name} is missing and nothing fills it")
            return stored, False
        if write_secret(api, namespace, name, following, stored=secret, labels=labels):
            return following, True
    raise KubeError(f"the Secret {namespace}/{name} kept changing under this replica")
