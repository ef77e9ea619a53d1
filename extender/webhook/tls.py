"""The certificate the webhook serves, kept current: self-managed (a CA and serving certificate
in a Secret that every replica shares, rotated by `pki.next_bundle`, the CA published as the
`caBundle` of the webhook configurations) or files given by flags (reloaded when they change, as
cert-manager rewrites a mounted Secret).

`refresh` does the I/O (in a thread): read the Secret, store the next rotation step if one is due,
or create it again when it is gone (`secret.keep`: a replica that loses the race reads the
winner's), publish the trusted CAs, and return the pair to serve. `install` runs on the event
loop: it tries the pair in a scratch context, then loads it into the one `SSLContext` the server
was started with, so new connections get the new certificate and open ones finish on the old; a
pair that does not load is refused and the old one served. `watch` follows the Secret, so a
change or a deletion is acted on at once rather than at the next periodic check.

The caBundle published is the Secret's trusted CAs and those the configurations already trust
that are newer than all of them and unexpired: a replica that read an older Secret never takes
away a CA a newer one added, while a CA the Secret dropped (expired, or the Secret deleted to
replace it) leaves the caBundle as soon as a replica reads the Secret that dropped it. A CA file
given by flags keeps every unexpired CA already trusted (see `published_cas`).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import shutil
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes import client as k8s

from extender.kube.webhooks import set_ca_bundle
from extender.pki import Bundle, CertOptions, next_bundle
from extender.webhook.secret import Outcome, SecretApi, SecretIo, SecretWatch, keep

log = logging.getLogger(__name__)
LABELS = {  # the Secret's when the webhook creates it (part-of, as the manifests label it)
    "app.kubernetes.io/name": "lahar",
    "app.kubernetes.io/part-of": "lahar",
    "app.kubernetes.io/component": "webhook",
}


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
    def __init__(
        self, api: k8s.ApiClient, options: TlsOptions, secret: SecretIo | None = None
    ) -> None:
        self.api = api
        self.options = options
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.serving: Pair | None = None
        self.published = False  # the caBundle the configurations carry is this webhook's
        self._folder = Path(tempfile.mkdtemp(prefix="lahar-webhook-"))  # 0700, keys in it 0600
        namespace, name = options.stored_in
        # The Secret's requests (given: a fake, in tests).
        self._secret = (
            secret if secret is not None else SecretApi(api, namespace, name, labels=LABELS)
        )

    def refresh(self) -> Pair:
        """The pair to serve now, after one rotation step if one is due (blocking I/O)."""
        if self.options.cert_file is not None and self.options.key_file is not None:
            pair = Pair(self.options.cert_file.read_bytes(), self.options.key_file.read_bytes())
            if self.options.ca_file is not None:
                changed = self._publish(self.options.ca_file.read_bytes(), older=True)
                self._report(None, pair, changed)
            else:
                self.published = True  # the caBundle is someone else's (cert-manager's injector)
            return pair
        namespace, name = self.options.stored_in
        kept = keep(self._secret, self._step, what=f"Secret {namespace}/{name}")
        bundle = Bundle.from_data(kept.data)
        assert bundle is not None  # what keep returns is what _step accepted or wrote
        changed = self._publish(bundle.trusted)
        self._report(kept.outcome, Pair(bundle.cert, bundle.key), changed)
        return Pair(bundle.cert, bundle.key)

    def watch(
        self, loop: asyncio.AbstractEventLoop, changed: Callable[[], None]
    ) -> SecretWatch | None:
        """A started watch of the Secret calling `changed` on `loop` when it may have changed;
        None when the certificates are files."""
        if self.options.cert_file is not None:
            return None
        namespace, name = self.options.stored_in
        watch = SecretWatch(self.api, namespace, name, changed, loop)
        watch.start()
        return watch

    def _report(self, outcome: Outcome | None, pair: Pair, changed: list[str]) -> None:
        """One INFO line for what `refresh` did to the Secret (`outcome`; None with files) and
        the caBundle (`changed`: the configurations it set), none when both were right. A Secret
        found missing is recoverable and said so, never as an error."""
        namespace, name = self.options.stored_in
        secret = f"secret {namespace}/{name}"
        again = self.serving is not None  # (else this is the process's first certificate)
        gone = "was deleted" if again else "did not exist"
        published = "republished" if again else "published"
        if outcome is Outcome.CREATED:
            log.info("%s %s: wrote new certificates, caBundle %s", secret, gone, published)
        elif outcome is Outcome.ADOPTED:
            log.info(
                "%s %s: another replica wrote new certificates first; serving them, caBundle %s",
                secret,
                gone,
                published,
            )
        elif outcome is Outcome.REPLACED:
            log.info(
                "%s written: serving certificate until %s%s",
                secret,
                pair.expires.isoformat(),
                ", caBundle republished" if changed else "",
            )
        elif changed:
            log.info("%s: caBundle set to this webhook's CAs", ", ".join(changed))

    def _step(self, data: dict[str, bytes] | None) -> dict[str, bytes] | None:
        stored = Bundle.from_data(data or {})
        following = next_bundle(stored, self.options.certs, datetime.datetime.now(datetime.UTC))
        return None if following is None else following.to_data()

    def _publish(self, trusted: bytes, *, older: bool = False) -> list[str]:
        """Publish `trusted` as the configurations' caBundle, keeping the unexpired CAs they
        carry that are newer than all of `trusted` (a replica that read an older Secret never
        takes away a CA a newer one added), and with `older` the older ones too (see
        `published_cas`); the configurations it changed, as "kind name"."""
        ours = x509.load_pem_x509_certificates(trusted)

        def bundle_for(current: bytes) -> bytes:
            return b"".join(
                c.public_bytes(serialization.Encoding.PEM)
                for c in published_cas(ours, _certificates(current), _now(), older=older)
            )

        changed = [
            f"{kind} {name}"
            for kind, name in self.options.configurations
            if set_ca_bundle(self.api, kind, name, bundle_for)
        ]
        self.published = True
        return changed

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


def published_cas(
    ours: list[x509.Certificate],
    current: list[x509.Certificate],
    now: datetime.datetime,
    *,
    older: bool = False,
) -> list[x509.Certificate]:
    """The caBundle to publish: `ours`, then the unexpired CAs of `current` (the caBundle
    published now) that another replica added from a newer Secret, issued after every one of
    ours. An older one left the Secret on purpose (the Secret was deleted to replace its CA;
    rotation only drops expired CAs) and is left out, unless `older`: files given by flags,
    which each replica's kubelet updates in its own time, so another replica may still serve
    a certificate of the CA the files no longer name."""
    newest = max((c.not_valid_before_utc for c in ours), default=None)
    kept = [
        c
        for c in current
        if c not in ours
        and c.not_valid_after_utc > now
        and (older or newest is None or c.not_valid_before_utc > newest)
    ]
    return [*ours, *kept]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _certificates(pem: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        return []
