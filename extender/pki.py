"""Lahar's certificates (the webhook's, and the extender's with kube-scheduler's client
certificate), made and rotated with `cryptography`: pure functions of what is stored, the options
and the time, so every rotation step is unit-tested without a cluster.

A `Bundle` is what a Secret holds: the CA (certificate and key) that signs serving certificates,
the serving certificate and key, and `trusted`, the CA certificates clients are told to trust (the
webhook configurations' `caBundle`, kube-scheduler's extender `caFile`). `next_bundle` returns the
next bundle, or None when the stored one is good. One step at a time, so no request is ever
refused during a rotation:

1. nothing stored, or unreadable: a new CA and a serving certificate;
2. the CA nears its end: a new CA joins `trusted` beside the old one; the serving certificate,
   signed by the old CA, stays (both are trusted);
3. the serving certificate nears its end, does not name every host, or was signed by a CA other
   than the current one: a new serving certificate from the current CA, naming the configured
   hosts and every name the old one had. While a new CA has been trusted for less than `grace`
   (the time the API server needs to see the new `caBundle`) the old CA's certificate is kept,
   unless it would end first;
4. CAs that have expired leave `trusted`.

`next_client_pair` does the same for a client certificate (kube-scheduler's, for mutual TLS with
the extender): a new one from the current CA when it nears its end or another CA signed it.

The same concept at a higher layer: `devcluster.pki`, the dev cluster's CA, certificates and tokens,
its certificates made with `new_ca` and `new_leaf`.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Secret keys (type kubernetes.io/tls: tls.crt and tls.key are the serving pair).
CA_CERT, CA_KEY, CERT, KEY, TRUSTED = "ca.crt", "ca.key", "tls.crt", "tls.key", "ca-bundle.crt"
BACKDATE = datetime.timedelta(minutes=5)  # certificates start this early (clocks drift)
_DNS_LABEL = re.compile(r"[a-z0-9*]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True)
class CertOptions:
    hosts: tuple[str, ...]  # DNS names and IP addresses the serving certificate must name
    ca_validity: datetime.timedelta = datetime.timedelta(days=3650)
    cert_validity: datetime.timedelta = datetime.timedelta(days=365)
    renew_fraction: float = 1 / 3  # renew when this share of a certificate's life is left
    grace: datetime.timedelta = datetime.timedelta(minutes=2)
    ca_name: str = "lahar-webhook-ca"  # the CA's common name, before a random suffix


@dataclass(frozen=True)
class Bundle:
    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes
    trusted: bytes

    def to_data(self) -> dict[str, bytes]:
        return {
            CA_CERT: self.ca_cert,
            CA_KEY: self.ca_key,
            CERT: self.cert,
            KEY: self.key,
            TRUSTED: self.trusted,
        }

    @classmethod
    def from_data(cls, data: dict[str, bytes]) -> Bundle | None:
        """The bundle a Secret's data holds; None when a key is missing or does not parse."""
        try:
            bundle = cls(data[CA_CERT], data[CA_KEY], data[CERT], data[KEY], data[TRUSTED])
            x509.load_pem_x509_certificate(bundle.ca_cert)
            x509.load_pem_x509_certificate(bundle.cert)
            x509.load_pem_x509_certificates(bundle.trusted)
            serialization.load_pem_private_key(bundle.ca_key, password=None)
            serialization.load_pem_private_key(bundle.key, password=None)
        except (KeyError, ValueError, TypeError):
            return None
        return bundle


def next_bundle(
    stored: Bundle | None, options: CertOptions, now: datetime.datetime
) -> Bundle | None:
    """The next bundle to store (one rotation step), or None when `stored` needs nothing."""
    if stored is None:
        ca_cert, ca_key = _new_ca(options, now)
        cert_pem, key_pem = _new_cert(ca_cert, ca_key, options.hosts, options, now)
        return Bundle(ca_cert, ca_key, cert_pem, key_pem, trusted=ca_cert)
    ca = x509.load_pem_x509_certificate(stored.ca_cert)
    if _ending(ca, options, now):
        ca_cert, ca_key = _new_ca(options, now)
        return replace(stored, ca_cert=ca_cert, ca_key=ca_key, trusted=ca_cert + stored.trusted)
    cert = x509.load_pem_x509_certificate(stored.cert)
    names = _names(cert)
    settles = ca.not_valid_before_utc + BACKDATE + options.grace
    foreign = cert.issuer != ca.subject
    if foreign and now < settles:
        # The API server may not trust the new CA yet: keep the old CA's certificate unless it
        # ends first.
        due = cert.not_valid_after_utc <= settles
    else:
        due = foreign or _ending(cert, options, now) or not set(options.hosts) <= set(names)
    if due:
        # Every name the certificate had stays: replicas configured with other names converge
        # instead of replacing each other's certificate.
        hosts = (*options.hosts, *(n for n in names if n not in options.hosts))
        new_cert, new_key = _new_cert(stored.ca_cert, stored.ca_key, hosts, options, now)
        return replace(stored, cert=new_cert, key=new_key)
    trusted = [
        c for c in x509.load_pem_x509_certificates(stored.trusted) if c.not_valid_after_utc > now
    ]
    kept = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in trusted)
    if kept != stored.trusted:
        return replace(stored, trusted=kept)
    return None


@dataclass(frozen=True)
class ClientPair:
    """A client certificate, its key and the CAs that verify the server (`ca.crt`)."""

    cert: bytes
    key: bytes
    trusted: bytes

    def to_data(self) -> dict[str, bytes]:
        return {CERT: self.cert, KEY: self.key, CA_CERT: self.trusted}

    @classmethod
    def from_data(cls, data: dict[str, bytes]) -> ClientPair | None:
        """The pair a Secret's data holds; None when a key is missing or does not parse."""
        try:
            pair = cls(data[CERT], data[KEY], data[CA_CERT])
            x509.load_pem_x509_certificate(pair.cert)
            x509.load_pem_x509_certificates(pair.trusted)
            serialization.load_pem_private_key(pair.key, password=None)
        except (KeyError, ValueError, TypeError):
            return None
        return pair


def next_client_pair(
    stored: ClientPair | None,
    bundle: Bundle,
    common_name: str,
    options: CertOptions,
    now: datetime.datetime,
) -> ClientPair | None:
    """The client certificate `common_name` should hold now (with the CAs that verify the
    server), or None when `stored` is that. It moves to a new CA together with the serving
    certificate, after the grace `next_bundle` gives the new CA, so the server trusts it by then:
    a new one when there is none, it nears its end, it names someone else, or its CA is not the
    one that signed the serving certificate."""
    if stored is not None:
        cert = x509.load_pem_x509_certificate(stored.cert)
        serving = x509.load_pem_x509_certificate(bundle.cert)
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        current = (
            cert.issuer == serving.issuer
            and not _ending(cert, options, now)
            and [n.value for n in names] == [common_name]
        )
        if current:
            return (
                None
                if stored.trusted == bundle.trusted
                else replace(stored, trusted=bundle.trusted)
            )
    cert_pem, key_pem = _new_cert(
        bundle.ca_cert, bundle.ca_key, [common_name], options, now, client=True
    )
    return ClientPair(cert_pem, key_pem, bundle.trusted)


def _ending(cert: x509.Certificate, options: CertOptions, now: datetime.datetime) -> bool:
    life = cert.not_valid_after_utc - (cert.not_valid_before_utc + BACKDATE)
    return cert.not_valid_after_utc - now <= life * options.renew_fraction


def _names(cert: x509.Certificate) -> list[str]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    ips = [str(ip) for ip in names.get_values_for_type(x509.IPAddress)]
    return [*names.get_values_for_type(x509.DNSName), *ips]


def normal_host(host: str) -> str:
    """`host` as the certificate names it (an IP address in its canonical form, a DNS name in
    lower case); ValueError when it is neither."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    name = host.lower()
    labels = name.split(".")
    if not name.isascii() or not all(_DNS_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"{host!r} is neither an IP address nor a DNS name")
    return name


def service_hosts(service: str, namespace: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The names a Service's serving certificate carries (the `.svc` name first, as clients
    in the cluster use it) and `extra` ones; ValueError naming a host that is neither a DNS name
    nor an IP address."""
    full = f"{service}.{namespace}"
    hosts = (f"{full}.svc", full, service, f"{full}.svc.cluster.local", *extra)
    return tuple(dict.fromkeys(normal_host(host) for host in hosts))


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def new_ca(
    common_name: str, not_after: datetime.datetime, now: datetime.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA (EC P-256) that signs leaf certificates only."""
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key


def new_leaf(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    hosts: Sequence[str],
    *,
    not_after: datetime.datetime,
    now: datetime.datetime,
    client: bool = False,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate `ca` signs: for a server naming `hosts` (DNS names or IP addresses), or with
    `client` for a client authenticating as `common_name` (it names no host)."""
    key = _key()
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _new_ca(options: CertOptions, now: datetime.datetime) -> tuple[bytes, bytes]:
    name = f"{options.ca_name}-{secrets.token_hex(6)}"
    cert, key = new_ca(name, now + options.ca_validity, now)
    return _pem(cert), pem_key(key)


def _new_cert(
    ca_pem: bytes,
    ca_key_pem: bytes,
    hosts: Sequence[str],
    options: CertOptions,
    now: datetime.datetime,
    *,
    client: bool = False,
) -> tuple[bytes, bytes]:
    """A serving certificate naming `hosts` (the first is its common name), or with `client` a
    client certificate whose common name is `hosts[0]` and that names no host."""
    ca = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an EC key")
    not_after = min(now + options.cert_validity, ca.not_valid_after_utc)
    names = [] if client else hosts
    cert, key = new_leaf(ca, ca_key, hosts[0], names, not_after=not_after, now=now, client=client)
    return _pem(cert), pem_key(key)
