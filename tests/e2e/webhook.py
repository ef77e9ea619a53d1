"""Helpers for the webhook's end-to-end tests: raw creates that keep the API server's answer,
the webhook's address, the CA it serves under and the CAs its configurations trust, the log it
writes, and starting it again after a test stopped it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster.lahar import wait_ready
from extender.kube.raw import send
from extender.kube.secrets import decoded, secret_data
from extender.kube.webhooks import ADMISSION_REGISTRATION
from extender.kube.writes import get, object_path

WEBHOOK = "lahar-webhook"
SECRET = "lahar-webhook-tls"  # (in lahar-system)
CONFIGURATIONS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def create(api: k8s.ApiClient, body: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
    """POST `body` as is (no apply); the object as stored. A refusal raises `ApiStatusError`
    whose message is the API server's (with the webhook's denial)."""
    meta = body["metadata"]
    path = object_path(body["apiVersion"], body["kind"], meta.get("namespace", ""))
    query = [("dryRun", "All")] if dry_run else []
    stored: dict[str, Any] = json.loads(send(api, "POST", path, body=body, query=query).read())
    return stored


def url(cluster: devcluster.DevCluster, path: str) -> str:
    return f"https://127.0.0.1:{cluster.state.ports[WEBHOOK]}{path}"


def ca_bundle(api: k8s.ApiClient) -> bytes:
    """The CAs the webhook's Secret says the API server trusts."""
    secret = get(api, "v1", "Secret", "lahar-system", SECRET)
    assert secret is not None, "the webhook made no certificate Secret"
    return secret_data(secret)["ca-bundle.crt"]


def trusted_cas(api: k8s.ApiClient) -> set[bytes]:
    """The distinct caBundles of every webhook of both configurations (one, once they agree)."""
    bundles = set()
    for kind in CONFIGURATIONS:
        config = get(api, ADMISSION_REGISTRATION, kind, "", WEBHOOK) or {}
        for hook in config.get("webhooks") or []:
            bundles.add(decoded((hook.get("clientConfig") or {}).get("caBundle") or "") or b"")
    return bundles


def log_file(cluster: devcluster.DevCluster) -> Path:
    """The webhook's log (INFO and above, as the process writes it)."""
    (record,) = [r for r in cluster.state.processes if r.name == WEBHOOK]
    return record.log


def restart_webhook(cluster: devcluster.DevCluster) -> None:
    """Start the stopped webhook again; wait until it serves with a synced cache."""
    record = cluster.start_component(WEBHOOK, die_with_parent=True)
    wait_ready(record, cluster.state.ports[WEBHOOK], timeout=60, tls=True)
