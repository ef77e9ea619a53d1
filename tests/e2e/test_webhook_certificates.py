"""Self-managed certificates rotating under load: a second `lahar webhook` with lifetimes of
seconds (its own Secret and webhook configurations, called only for this test's Jobs) rotates
its serving certificate and its CA while the real API server calls it continuously, and no call
fails. Run with the admin kubeconfig: the dev cluster's own webhook user may touch only the
Secret and configurations named lahar-webhook*."""

from __future__ import annotations

import hashlib
import secrets
import ssl
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import health, process
from extender.devcluster.lahar import loopback_webhooks
from extender.devcluster.ports import free_ports
from extender.kube import apply_object, delete, load_manifests
from extender.kube.raw import ApiStatusError
from extender.kube.secrets import secret_data
from extender.kube.writes import get
from tests.builders import make_job
from tests.e2e.webhook import create

ROOT = Path(__file__).resolve().parents[2]
LABEL = "lahar.io/rotation-test"


def _configurations(name: str, port: int) -> list[dict[str, Any]]:
    """Lahar's webhook configurations, renamed, for Jobs labelled for this test only."""
    bodies = []
    for item in load_manifests(ROOT / "manifests" / "base" / "webhook.yaml"):
        if "webhooks" not in item.body:
            continue  # the certificates' Secret: this webhook makes its own
        body = loopback_webhooks(item.body, port)
        body["metadata"]["name"] = name
        hooks = [h for h in body["webhooks"] if h["name"].startswith("job-")]
        for hook in hooks:
            hook["name"] = hook["name"].replace("lahar.dev", f"{name}.lahar.dev")
            hook["objectSelector"] = {"matchLabels": {LABEL: name}}
        body["webhooks"] = hooks
        bodies.append(body)
    return bodies


@pytest.fixture
def rotating(
    dev_cluster: devcluster.DevCluster, api: k8s.ApiClient, tmp_path: Path
) -> Iterator[tuple[str, int]]:
    name = f"lahar-rotation-{secrets.token_hex(3)}"
    (port,) = free_ports(1)
    configurations = _configurations(name, port)
    for body in configurations:
        apply_object(api, body)
    argv = [
        sys.executable,
        "-m",
        "extender.cli.main",
        "webhook",
        f"--kubeconfig={dev_cluster.kubeconfig}",
        "--host=127.0.0.1",
        f"--port={port}",
        "--namespace=lahar-system",
        f"--secret-name={name}",
        f"--webhook-configuration={name}",
        "--extra-host=127.0.0.1",
        "--cert-validity=9s",
        "--ca-validity=30s",
        "--check-interval=1s",
        "--trust-grace=3s",
    ]
    record, child = process.start(name, argv, tmp_path / "webhook.log", die_with_parent=True)
    try:
        health.wait_healthy(record, f"https://127.0.0.1:{port}/readyz", timeout=60)
        yield name, port
    finally:
        process.stop(record, timeout=10.0)
        child.poll()
        for body in configurations:
            delete(api, body["apiVersion"], body["kind"], body["metadata"]["name"])
        delete(api, "v1", "Secret", name, "lahar-system")


def _served(port: int) -> str:
    """Fingerprint of the certificate the webhook serves now."""
    pem = ssl.get_server_certificate(("127.0.0.1", port))
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()


def test_certificates_rotate_while_the_api_server_calls_without_a_failure(
    api: k8s.ApiClient, namespace: str, rotating: tuple[str, int]
) -> None:
    name, port = rotating
    job = make_job("rotated").ns(namespace).task("worker", 1).build()
    job["metadata"]["labels"] = {LABEL: name}
    served, cas, calls, failures = set(), set(), 0, []
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        try:
            create(api, job, dry_run=True)  # through both of this test's webhooks
        except ApiStatusError as error:
            failures.append(str(error))
        calls += 1
        served.add(_served(port))
        secret = get(api, "v1", "Secret", "lahar-system", name)
        if secret is not None:
            cas.add(secret_data(secret).get("ca.crt", b""))
        time.sleep(0.1)
    assert failures == [], f"{len(failures)} of {calls} calls failed: {failures[:3]}"
    assert len(served) >= 4, f"the serving certificate changed {len(served) - 1} times"
    assert len(cas) >= 2, "the CA was never rotated"
