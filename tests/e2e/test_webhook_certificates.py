"""Self-managed certificates. Rotating under load: a second `lahar webhook` with lifetimes of
seconds (its own Secret and webhook configurations, called only for this test's Jobs) rotates
its serving certificate and its CA while the real API server calls it continuously, and no call
fails; run with the admin kubeconfig, as the dev cluster's own webhook user may touch only the
Secret and configurations named lahar-webhook*. Deleted: the dev cluster's webhook, as its
ServiceAccount under the manifests' RBAC, writes its Secret again with new certificates and
republishes the caBundle within seconds, and Jobs are admitted again; that RBAC lets it create
that one Secret and no other. Replicas racing to create the Secret agree on the one the API
server took first."""

from __future__ import annotations

import datetime
import hashlib
import secrets
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import child_processes, health
from extender.devcluster.lahar import KUBECONFIGS, loopback_webhooks
from extender.devcluster.ports import free_ports
from extender.kube import apply_object, connect, delete, load_manifests
from extender.kube.raw import ApiStatusError, send
from extender.kube.secrets import secret_data
from extender.kube.watch import list_pages
from extender.kube.writes import get, object_path
from extender.pki import Bundle, CertOptions, next_bundle
from extender.webhook.secret import Kept, Outcome, SecretApi, keep
from tests.builders import make_job
from tests.e2e.webhook import SECRET, WEBHOOK, create, log_file, trusted_cas

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
    record, child = child_processes.start(
        name, argv, tmp_path / "webhook.log", die_with_parent=True
    )
    try:
        health.wait_healthy(record, f"https://127.0.0.1:{port}/readyz", timeout=60)
        yield name, port
    finally:
        child_processes.stop(record, timeout=10.0)
        child.poll()
        for body in configurations:
            delete(api, body["apiVersion"], body["kind"], body["metadata"]["name"])
        delete(api, "v1", "Secret", name, "lahar-system")


def _served(port: int) -> str:
    """Fingerprint of the certificate the webhook serves now."""
    return _fingerprint(ssl.get_server_certificate(("127.0.0.1", port)))


def _fingerprint(pem: str) -> str:
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


RECOVERY = 30.0  # seconds from the Secret's deletion until Jobs are admitted again, at most
DELETED = f"secret lahar-system/{SECRET} was deleted: wrote new certificates, caBundle republished"


def _recovered(
    api: k8s.ApiClient, job: dict[str, Any], old_ca: bytes, port: int
) -> dict[str, bytes] | None:
    """The Secret's data once it is back with a new CA that both configurations trust alone,
    the webhook serves its certificate and a Job is admitted; None until then."""
    secret = get(api, "v1", "Secret", "lahar-system", SECRET)
    data = secret_data(secret) if secret is not None else {}
    if data.get("ca.crt", old_ca) == old_ca or trusted_cas(api) != {data["ca.crt"]}:
        return None
    if _served(port) != _fingerprint(data["tls.crt"].decode()):
        return None
    try:
        create(api, job, dry_run=True)  # through the job-defaults and job-rules webhooks
    except ApiStatusError:
        return None
    return data


def test_a_deleted_certificate_secret_is_written_again_and_jobs_admitted_within_seconds(
    api: k8s.ApiClient, namespace: str, dev_cluster: devcluster.DevCluster
) -> None:
    port = dev_cluster.state.ports[WEBHOOK]
    job = make_job("after-deletion").ns(namespace).task("worker", 1).build()
    create(api, job, dry_run=True)
    stored = get(api, "v1", "Secret", "lahar-system", SECRET)
    assert stored is not None
    old = secret_data(stored)
    log = log_file(dev_cluster)
    logged_before = log.stat().st_size

    assert delete(api, "v1", "Secret", SECRET, "lahar-system")
    deleted = time.monotonic()
    data = None
    try:
        while data is None and time.monotonic() - deleted < RECOVERY:
            data = _recovered(api, job, old["ca.crt"], port)
            time.sleep(0.2)
    finally:
        if get(api, "v1", "Secret", "lahar-system", SECRET) is None:  # (for the tests after)
            body = {"metadata": {"name": SECRET, "namespace": "lahar-system"}, "data": {}}
            apply_object(api, {"apiVersion": "v1", "kind": "Secret", **body})
    assert data is not None, f"not recovered {RECOVERY:.0f} s after the deletion"
    assert data["ca-bundle.crt"] == data["ca.crt"]  # (the old CA is trusted no more)
    with log.open("rb") as written:
        written.seek(logged_before)
        lines = written.read().decode(errors="replace").splitlines()
    assert any(line.endswith(DELETED) and " INFO " in line for line in lines), lines
    assert not [line for line in lines if " ERROR " in line or " CRITICAL " in line]


def test_the_webhook_may_create_its_certificate_secret_and_no_other(
    dev_cluster: devcluster.DevCluster,
) -> None:
    kubeconfig = dev_cluster.state.state_dir / f"{KUBECONFIGS[WEBHOOK]}.kubeconfig"
    secrets_path = object_path("v1", "Secret", "lahar-system")
    dry_apply = [("dryRun", "All"), ("fieldManager", "lahar-e2e")]

    def secret(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "namespace": "lahar-system"},
        }

    def refused(
        webhook: k8s.ApiClient, method: str, name: str, query: list[tuple[str, str | int]]
    ) -> int:
        path = secrets_path if method == "POST" else f"{secrets_path}/{name}"
        kind = "application/apply-patch+yaml" if method == "PATCH" else "application/json"
        with pytest.raises(ApiStatusError) as error:
            send(webhook, method, path, body=secret(name), query=query, content_type=kind).read()
        return error.value.status

    with connect(kubeconfig) as webhook:
        # Its own Secret, by name: applied (which may create it), listed and watched by name...
        path = f"{secrets_path}/{SECRET}"
        kind = "application/apply-patch+yaml"
        send(webhook, "PATCH", path, body=secret(SECRET), query=dry_apply, content_type=kind).read()
        items, _ = list_pages(webhook, secrets_path, fields=f"metadata.name={SECRET}")
        assert [item["metadata"]["name"] for item in items] == [SECRET]
        # ...and no other Secret, nor any by POST (which RBAC cannot limit to a name).
        assert refused(webhook, "PATCH", "lahar-webhook-other", dry_apply) == 403
        assert refused(webhook, "POST", SECRET, [("dryRun", "All")]) == 403
        with pytest.raises(ApiStatusError) as listed:
            list_pages(webhook, secrets_path)
        assert listed.value.status == 403


def test_replicas_racing_to_create_the_secret_agree_on_the_first(api: k8s.ApiClient) -> None:
    name = f"lahar-race-{secrets.token_hex(3)}"
    options = CertOptions(hosts=("lahar-webhook.lahar-system.svc",))

    def step(data: dict[str, bytes] | None) -> dict[str, bytes] | None:
        now = datetime.datetime.now(datetime.UTC)
        following = next_bundle(Bundle.from_data(data or {}), options, now)
        return None if following is None else following.to_data()

    replicas = [SecretApi(api, "lahar-system", name, labels={}) for _ in range(4)]
    start = threading.Barrier(len(replicas))
    kept: list[Kept] = []

    def replica(io: SecretApi) -> None:
        start.wait()
        kept.append(keep(io, step))

    threads = [threading.Thread(target=replica, args=(io,)) for io in replicas]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        stored = get(api, "v1", "Secret", "lahar-system", name)
        assert stored is not None
        assert len(kept) == len(replicas)
        assert all(one.data == secret_data(stored) for one in kept)
        outcomes = sorted(one.outcome.value for one in kept)
        assert outcomes.count(Outcome.CREATED.value) == 1, outcomes
        # A create by yet another replica (field manager) finds the first one's data: a conflict.
        late = SecretApi(api, "lahar-system", name, labels={})
        assert late.create({"ca.crt": b"another"}) is False
        assert secret_data(get(api, "v1", "Secret", "lahar-system", name) or {}) == kept[0].data
    finally:
        delete(api, "v1", "Secret", name, "lahar-system")
