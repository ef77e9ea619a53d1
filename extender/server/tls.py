"""HTTPS for the extender, and mutual TLS with kube-scheduler.

`ServerTls` serves the certificate and key files it is given (kube-scheduler's `enableHTTPS`);
with a client CA it also asks every caller for a client certificate and verifies it against that
CA (the scheduler's `tlsConfig.certFile/keyFile`). The handshake itself only refuses a certificate
that does not verify: probes and Prometheus connect without one. Whether a call carried a verified
certificate is `client_certified(request)`, which the verb handlers require, so filter,
prioritize, preempt and bind (the last two change the cluster) answer 403 to anyone else.

The files are checked again every `interval` seconds and, when they changed (cert-manager
rewrote a mounted Secret), tried in a scratch context and then loaded into the live one: new
connections get the new certificate, open ones finish on the old. A CA once loaded stays trusted
until the process restarts (OpenSSL can add CAs to a context, not remove them).
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from cryptography import x509

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path
    client_ca: Path | None = None  # given: verb calls need a client certificate it signed
    interval: float = 60.0


class ServerTls:
    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._stamp: tuple[float, ...] = ()
        self.expires = 0.0  # when the served certificate ends (Unix time)
        self.reload()

    @property
    def requires_client(self) -> bool:
        return self.files.client_ca is not None

    def reload(self) -> bool:
        """Load the files if they changed since the last load; True when they were. A set that
        does not load raises (`ssl.SSLError`, `OSError`) and leaves the served one in place."""
        paths = [self.files.cert, self.files.key]
        if self.files.client_ca is not None:
            paths.append(self.files.client_ca)
        stamp = tuple(path.stat().st_mtime for path in paths)
        if stamp == self._stamp:
            return False
        for context in (ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), self.context):  # a trial first
            context.load_cert_chain(self.files.cert, self.files.key)
            if self.files.client_ca is not None:
                context.load_verify_locations(cafile=self.files.client_ca)
                context.verify_mode = ssl.CERT_OPTIONAL
        self._stamp = stamp
        served = x509.load_pem_x509_certificate(self.files.cert.read_bytes())
        self.expires = served.not_valid_after_utc.timestamp()
        log.info(
            "serving HTTPS with %s (valid until %s)%s",
            self.files.cert,
            served.not_valid_after_utc.isoformat(),
            f"; verb calls need a client certificate from {self.files.client_ca}"
            if self.files.client_ca
            else "",
        )
        return True


def client_certified(request: web.Request) -> bool:
    """The call came over TLS with a client certificate the client CA verified."""
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    # With CERT_OPTIONAL a certificate that arrived was verified in the handshake; the binary
    # form spares decoding it into a dict on every call.
    return ssl_object is not None and ssl_object.getpeercert(binary_form=True) is not None
