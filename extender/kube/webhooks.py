"""The `caBundle` of the webhook configurations (so the API server trusts the certificate the
webhook serves)."""

from __future__ import annotations

import base64
from collections.abc import Callable

from kubernetes import client as k8s

from extender.kube import writes
from extender.kube.client import KubeError
from extender.kube.secrets import decoded

ADMISSION_REGISTRATION = "admissionregistration.k8s.io/v1"


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
        current = decoded(client.get("caBundle") or "") or b""
        encoded = base64.b64encode(bundle_for(current)).decode()
        if client.get("caBundle") != encoded:
            client["caBundle"] = encoded
            changed = True
    if changed:
        writes.replace(api, config)
    return changed
