"""The webhook's own objects: its certificate Secret, and the `caBundle` of its webhook
configurations (so the API server trusts the certificate the webhook serves)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from extender.kube import writes
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError

ADMISSION_REGISTRATION = "admissionregistration.k8s.io/v1"


def _decoded(value: object) -> bytes | None:
    """Base64 as Kubernetes writes it in Secrets and caBundles; None when it is not."""
    if not isinstance(value, str | bytes):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:  # binascii.Error
        return None


def secret_data(secret: dict[str, Any]) -> dict[str, bytes]:
    """The Secret's data, decoded (a key that is not base64 is left out)."""
    decoded = {key: _decoded(value) for key, value in (secret.get("data") or {}).items()}
    return {key: value for key, value in decoded.items() if value is not None}


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
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    if stored is None:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "data": encoded,
        }
        return writes.create(api, body)
    body = {**stored, "apiVersion": "v1", "kind": "Secret", "data": encoded}
    try:
        writes.replace(api, body)
    except ApiStatusError as error:
        if error.status == 409:
            return False
        raise
    return True


def set_ca_bundle(
    api: k8s.ApiClient, kind: str, name: str, bundle_for: Callable[[bytes], bytes]
) -> bool:
    """Every webhook of the configuration trusts `bundle_for(the CAs it trusts now)`; True when
    that changed it. A conflict (someone changed it meanwhile) raises `ApiStatusError` 409: try
    again later."""
    config = writes.get(api, ADMISSION_REGISTRATION, kind, "", name)
    if config is None:
        raise KubeError(f"{kind} {name} not found: apply Lahar's webhook configurations first")
    changed = False
    for hook in config.get("webhooks") or []:
        client = hook.setdefault("clientConfig", {})
        current = _decoded(client.get("caBundle") or "") or b""
        encoded = base64.b64encode(bundle_for(current)).decode()
        if client.get("caBundle") != encoded:
            client["caBundle"] = encoded
            changed = True
    if changed:
        writes.replace(api, config)
    return changed
