"""The certificate the webhook serves, kept current: self-managed (a CA and serving certificate
in a Secret that every replica shares, rotated by `pki.next_bundle`, the CA published as the
`caBundle` of the webhook configurations) or files given by flags (reloaded when they change, as
cert-manager rewrites a mounted Secret).

`refresh` does the I/O (in a thread): read the Secret, store the next rotation step if one is due
(a replica that loses the race reads the winner's), publish the trusted CAs, and return the pair to
serve. `install` runs on the event loop: it tries the pair in a scratch context, then loads it
into the one `SSLContext` the server was started with, so new connections get the new certificate
and open ones finish on the old; a pair that does not load is refused and the old one served.
The caBundle published keeps every unexpired CA the configurations already trust, so a replica
that read an older Secret never takes away a CA a newer one added.
"""

from __future__ import annotations

import datetime
import logging
import os
import shutil
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes import client as k8s

from extender.kube.secrets import settle
from extender.kube.webhooks import set_ca_bundle
from extender.pki import Bundle, CertOptions, next_bundle

log = logging.getLogger(__name__)
LABELS = {"app.kubernetes.io/name": "lahar", "app.kubernetes.io/component": "webhook"}


@dataclass(frozen=True)
class TlsOptions:
    certs: CertOptions
    stored_in: tuple[str, str] = ("lahar-system", "lahar-webhook-tls")  # the Secret's ns, name
    # (kind, name) of the webhook configurations whose caBundle this webhook keeps
    configurations: tuple[tuple[str, str], ...] = ()
    cert_file: Path | None = None  # given: serve these files instead of a self-managed pair
    key_file: Path | None = None
    ca_file: Path | None = None  # given with the files: publish it as the caBundle
    interval: float = 60.0  # seconds between checks


@dataclass(frozen=True)
class Pair:
    cert: bytes
    key: bytes

    @property
    def expires(self) -> datetime.datetime:
        return x509.load_pem_x509_certificate(self.cert).not_valid_after_utc


class ServingCertificate:
    def __init__(self, api: k8s.ApiClient, options: TlsOptions) -> None:
        self.api = api
        self.options = options
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.serving: Pair | None = None
        self.published = False  # the caBundle the configurations carry is this webhook's
        self._folder = Path(tempfile.mkdtemp(prefix="lahar-webhook-"))  # 0700, keys in it 0600

    def refresh(self) -> Pair:
        """The pair to serve now, after one rotation step if one is due (blocking I/O)."""
        if self.options.cert_file is not None and self.options.key_file is not None:
            pair = Pair(self.options.cert_file.read_bytes(), self.options.key_file.read_bytes())
            if self.options.ca_file is not None:
                self._publish(self.options.ca_file.read_bytes())
            else:
                self.published = True  # the caBundle is someone else's (cert-manager's injector)
            return pair
        bundle = self._stored_bundle()
        self._publish(bundle.trusted)
        return Pair(bundle.cert, bundle.key)

    def _stored_bundle(self) -> Bundle:
        namespace, name = self.options.stored_in
        data, written = settle(self.api, namespace, name, self._step, labels=LABELS)
        bundle = Bundle.from_data(data)
        assert bundle is not None  # what settle returns is what _step accepted or wrote
        if written:
            expires = Pair(bundle.cert, bundle.key).expires.isoformat()
            log.info(
                "certificate Secret %s/%s written: serving certificate until %s",
                namespace,
                name,
                expires,
            )
        return bundle

    def _step(self, data: dict[str, bytes] | None) -> dict[str, bytes] | None:
        stored = Bundle.from_data(data or {})
        following = next_bundle(stored, self.options.certs, datetime.datetime.now(datetime.UTC))
        return None if following is None else following.to_data()

    def _publish(self, trusted: bytes) -> None:
        """Publish `trusted` as the configurations' caBundle, keeping any unexpired CA they carry
        already: a replica that read an older Secret never takes away a CA a newer one added."""

        def bundle_for(current: bytes) -> bytes:
            ours = x509.load_pem_x509_certificates(trusted)
            now = datetime.datetime.now(datetime.UTC)
            kept = [
                c for c in _certificates(current) if c not in ours and c.not_valid_after_utc > now
            ]
            return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [*ours, *kept])

        for kind, name in self.options.configurations:
            if set_ca_bundle(self.api, kind, name, bundle_for):
                log.info("%s %s: caBundle set to this webhook's CAs", kind, name)
        self.published = True

    def install(self, pair: Pair) -> bool:
        """Serve `pair` from now on (on the event loop); True when it changed. A pair that does
        not load (a key that does not match, a file half written) raises `ssl.SSLError` and
        leaves the served one untouched."""
        if pair == self.serving:
            return False
        cert, key = self._folder / "tls.crt", self._folder / "tls.key"
        for path, data in ((cert, pair.cert), (key, pair.key)):
            temporary = path.with_suffix(".new")
            temporary.touch(mode=0o600)
            temporary.write_bytes(data)
            os.replace(temporary, path)
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)  # a trial first
        self.context.load_cert_chain(cert, key)
        self.serving = pair
        log.info("serving a certificate valid until %s", pair.expires.isoformat())
        return True

    def close(self) -> None:
        """Remove the files the keys were written to."""
        shutil.rmtree(self._folder, ignore_errors=True)


def _certificates(pem: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        return []
