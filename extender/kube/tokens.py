"""Tokens for ServiceAccounts (the TokenRequest API), as the kubelet gets them for a pod: the dev
cluster runs Lahar's components with their own ServiceAccounts' tokens, so the RBAC manifests are
exercised exactly as a cluster would use them."""

from __future__ import annotations

import json

from kubernetes import client as k8s

from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError, send


def service_account_token(api: k8s.ApiClient, namespace: str, name: str, seconds: int) -> str:
    """A bound token of ServiceAccount `namespace/name`, valid for `seconds`."""
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    try:
        answer = json.loads(send(api, "POST", path, body=body).read())
    except ApiStatusError as error:
        raise KubeError(f"token for ServiceAccount {namespace}/{name}: {error}") from error
    token: str = answer["status"]["token"]
    return token
