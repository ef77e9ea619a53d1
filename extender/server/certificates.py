"""The certificates for mutual TLS between kube-scheduler and the extender in a cluster, kept in
two Secrets that ship empty with the manifests (so RBAC can name them and nothing may create
Secrets):

- `lahar-extender-tls`, read only by the extender: the CA that signs both sides, the extender's
  serving certificate for its Service's names and the CAs trusted (a `pki.Bundle`, one rotation
  step of `pki.next_bundle` per start);
- `lahar-scheduler-tls`, read by kube-scheduler: its client certificate and key, and `ca.crt`, the
  CAs that verify the extender (`pki.next_client_pair`).

`issue` runs in the extender's init container and then hourly in its sidecar, and writes the
extender's files into a folder the server reads (an emptyDir; `lahar serve` reloads changed
files); `fetch` does the same for kube-scheduler (whose client reloads its certificate and key
files, but reads the CAs it trusts only at start). Certificates last a year and are renewed in
their last third. A new CA (in the last third of the CA's ten years) is trusted for `grace`
before it signs, and the client certificate moves to it with the serving certificate, so each
side trusts the other's new certificate first; kube-scheduler must restart within the grace.
"""

from __future__ import annotations

import datetime
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from kubernetes import client as k8s

from extender.kube import KubeError, writes
from extender.kube.secrets import secret_data, settle
from extender.pki import (
    CA_CERT,
    CERT,
    KEY,
    Bundle,
    CertOptions,
    ClientPair,
    next_bundle,
    next_client_pair,
)

log = logging.getLogger(__name__)
LABELS = {"app.kubernetes.io/name": "lahar", "app.kubernetes.io/component": "extender"}


@dataclass(frozen=True)
class IssueOptions:
    certs: CertOptions  # hosts: the extender Service's names
    namespace: str = "lahar-system"
    extender_secret: str = "lahar-extender-tls"  # noqa: S105 - a Secret's name
    scheduler_secret: str = "lahar-scheduler-tls"  # noqa: S105 - a Secret's name
    scheduler_name: str = "lahar-scheduler"  # the client certificate's common name


def issue(api: k8s.ApiClient, options: IssueOptions) -> tuple[Bundle, ClientPair]:
    """Fill or renew both Secrets (blocking I/O); the extender's bundle and the scheduler's
    client pair as stored afterwards."""
    now = datetime.datetime.now(datetime.UTC)

    def bundle_step(data: dict[str, bytes] | None) -> dict[str, bytes] | None:
        stored = Bundle.from_data(data or {})
        following = next_bundle(stored, options.certs, now)
        if following is None:
            return None
        if stored is not None and following.ca_cert != stored.ca_cert:
            log.warning(
                "a new CA is trusted from now and signs certificates after %s: restart "
                "kube-scheduler (deployment lahar-scheduler) before then, it reads the CAs it "
                "trusts only at start",
                (now + options.certs.grace).isoformat(),
            )
        return following.to_data()

    data, written = settle(
        api, options.namespace, options.extender_secret, bundle_step, labels=LABELS
    )
    bundle = Bundle.from_data(data)
    assert bundle is not None  # settle returns what bundle_step accepted or wrote
    _logged(options.namespace, options.extender_secret, written, bundle.cert)

    def client_step(data: dict[str, bytes] | None) -> dict[str, bytes] | None:
        stored = ClientPair.from_data(data or {})
        following = next_client_pair(stored, bundle, options.scheduler_name, options.certs, now)
        return None if following is None else following.to_data()

    data, written = settle(
        api, options.namespace, options.scheduler_secret, client_step, labels=LABELS
    )
    client = ClientPair.from_data(data)
    assert client is not None
    _logged(options.namespace, options.scheduler_secret, written, client.cert)
    return bundle, client


def _logged(namespace: str, name: str, written: bool, cert: bytes) -> None:
    until = x509.load_pem_x509_certificate(cert).not_valid_after_utc.isoformat()
    done = "written" if written else "current"
    log.info(
        "certificate Secret %s/%s %s: certificate valid until %s", namespace, name, done, until
    )


def fetch(
    api: k8s.ApiClient,
    namespace: str,
    name: str,
    *,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ClientPair:
    """The client pair the Secret holds, waiting up to `timeout` seconds for the extender's
    init container to fill it; KubeError when it stays empty or missing."""
    deadline = clock() + timeout
    while True:
        secret = writes.get(api, "v1", "Secret", namespace, name)
        pair = ClientPair.from_data(secret_data(secret)) if secret is not None else None
        if pair is not None:
            return pair
        if clock() >= deadline:
            state = "does not exist" if secret is None else "holds no client certificate"
            raise KubeError(
                f"Secret {namespace}/{name} {state} after {timeout:.0f} s: the extender's init "
                "container fills it (is the lahar-extender Deployment running?)"
            )
        log.info("waiting for the extender to fill Secret %s/%s", namespace, name)
        sleep(2.0)


def write_files(folder: Path, files: dict[str, bytes]) -> bool:
    """Write `files` into `folder` readable by this user only, each replaced whole and only when
    its content changed (readers reload on a new modification time); True when one changed."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, data in files.items():
        target = folder / name
        if target.is_file() and target.read_bytes() == data:
            continue
        temporary = folder / f".{name}.new"
        temporary.unlink(missing_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
        changed = True
    if changed:
        log.info("wrote %s into %s", ", ".join(sorted(files)), folder)
    return changed


def server_files(bundle: Bundle) -> dict[str, bytes]:
    """What `lahar serve` reads: its serving pair and the CAs that sign client certificates."""
    return {CERT: bundle.cert, KEY: bundle.key, CA_CERT: bundle.trusted}


def client_files(pair: ClientPair) -> dict[str, bytes]:
    """What kube-scheduler's extender tlsConfig reads: certFile, keyFile and caFile."""
    return pair.to_data()
