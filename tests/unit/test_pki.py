"""Certificate rotation (the webhook's bundle, kube-scheduler's client certificate), step by step,
on a clock the test moves."""

from __future__ import annotations

import datetime
import ssl
import tempfile
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from extender.pki import (
    Bundle,
    CertOptions,
    ClientPair,
    next_bundle,
    next_client_pair,
    normal_host,
    service_hosts,
)

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)
OPTIONS = CertOptions(
    hosts=("lahar-webhook.lahar-system.svc", "127.0.0.1"),
    ca_validity=300 * DAY,
    cert_validity=30 * DAY,
)


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def _verifies(bundle: Bundle, at: datetime.datetime) -> bool:
    """The serving certificate chains to a CA in `trusted` and is valid at `at`."""
    cert = _cert(bundle.cert)
    if not cert.not_valid_before_utc <= at < cert.not_valid_after_utc:
        return False
    for ca in x509.load_pem_x509_certificates(bundle.trusted):
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError):
            continue
        return True
    return False


def _step(bundle: Bundle | None, at: datetime.datetime) -> Bundle:
    """Apply plans until nothing changes (each step is what one check would store)."""
    current = bundle
    for _ in range(5):
        following = next_bundle(current, OPTIONS, at)
        if following is None:
            assert current is not None
            return current
        current = following
    raise AssertionError("next_bundle never settles")


def test_nothing_stored_makes_a_ca_and_a_serving_certificate_naming_every_host() -> None:
    bundle = next_bundle(None, OPTIONS, T0)
    assert bundle is not None
    names = _cert(bundle.cert).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert names.value.get_values_for_type(x509.DNSName) == ["lahar-webhook.lahar-system.svc"]
    assert [str(ip) for ip in names.value.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert bundle.trusted == bundle.ca_cert
    assert _verifies(bundle, T0)
    assert next_bundle(bundle, OPTIONS, T0) is None  # stable


def test_the_serving_certificate_is_renewed_from_the_same_ca_before_it_ends() -> None:
    bundle = _step(None, T0)
    assert next_bundle(bundle, OPTIONS, T0 + 19 * DAY) is None
    renewed = next_bundle(bundle, OPTIONS, T0 + 21 * DAY)  # a third of 30 days is left
    assert renewed is not None
    assert renewed.cert != bundle.cert and renewed.ca_cert == bundle.ca_cert
    assert renewed.trusted == bundle.trusted  # no caBundle change: nothing to wait for
    assert _verifies(renewed, T0 + 21 * DAY)


def test_a_new_ca_is_trusted_before_it_signs_and_the_old_one_leaves_when_it_expires() -> None:
    bundle = _step(None, T0)
    at = T0 + 205 * DAY  # less than a third of the CA's 300 days is left
    bundle = _step(bundle, T0 + 190 * DAY)  # the serving certificate kept fresh until then
    rotated = next_bundle(bundle, OPTIONS, at)
    assert rotated is not None and rotated.ca_cert != bundle.ca_cert
    assert len(x509.load_pem_x509_certificates(rotated.trusted)) == 2
    assert rotated.cert == bundle.cert  # still the old CA's: both are trusted meanwhile
    assert _verifies(rotated, at)
    assert next_bundle(rotated, OPTIONS, at + datetime.timedelta(seconds=30)) is None  # not settled
    resigned = next_bundle(rotated, OPTIONS, at + datetime.timedelta(minutes=3))
    assert resigned is not None and resigned.cert != rotated.cert
    _cert(resigned.cert).verify_directly_issued_by(_cert(resigned.ca_cert))
    later = _step(resigned, T0 + 301 * DAY)
    assert x509.load_pem_x509_certificates(later.trusted) == [_cert(later.ca_cert)]
    assert _verifies(later, T0 + 301 * DAY)


def test_two_years_of_hourly_checks_always_serve_a_trusted_certificate() -> None:
    bundle, cas, trusted_most = _step(None, T0), set(), 0
    for hour in range(0, 2 * 365 * 24, 7):
        at = T0 + datetime.timedelta(hours=hour)
        bundle = next_bundle(bundle, OPTIONS, at) or bundle  # one step per check
        assert _verifies(bundle, at), f"hour {hour}"
        cas.add(bundle.ca_cert)
        trusted_most = max(trusted_most, len(x509.load_pem_x509_certificates(bundle.trusted)))
    assert len(cas) >= 3 and trusted_most == 2


def test_a_missing_host_gets_a_new_certificate() -> None:
    bundle = _step(None, T0)
    wider = CertOptions(hosts=(*OPTIONS.hosts, "localhost"), ca_validity=300 * DAY)
    assert next_bundle(bundle, wider, T0) is not None


def test_a_damaged_secret_reads_as_nothing_stored() -> None:
    bundle = _step(None, T0)
    data = bundle.to_data()
    assert Bundle.from_data(data) == bundle
    assert Bundle.from_data({**data, "tls.crt": b"not a certificate"}) is None
    assert Bundle.from_data({k: v for k, v in data.items() if k != "ca.key"}) is None


def test_python_ssl_serves_the_pair() -> None:
    bundle = _step(None, datetime.datetime.now(datetime.UTC))
    with tempfile.TemporaryDirectory() as folder:
        cert, key = Path(folder) / "tls.crt", Path(folder) / "tls.key"
        cert.write_bytes(bundle.cert)
        key.write_bytes(bundle.key)
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)


def test_a_certificate_from_a_new_ca_waits_for_the_grace_even_when_the_old_one_is_ending() -> None:
    """Both lifetimes 30 days: the serving certificate is capped at the old CA's end, so it is
    'ending' exactly when the CA rotates; it must not be signed by the new CA before the grace."""
    short = CertOptions(hosts=OPTIONS.hosts, ca_validity=30 * DAY, cert_validity=30 * DAY)
    bundle = next_bundle(None, short, T0)
    assert bundle is not None
    at = T0 + 21 * DAY
    rotated = next_bundle(bundle, short, at)  # the CA rotates first
    assert rotated is not None and rotated.ca_cert != bundle.ca_cert
    early = next_bundle(rotated, short, at + datetime.timedelta(seconds=30))
    assert early is None  # the old CA's certificate still has 9 days: wait out the grace
    settled = next_bundle(rotated, short, at + datetime.timedelta(minutes=3))
    assert settled is not None
    _cert(settled.cert).verify_directly_issued_by(_cert(settled.ca_cert))


def test_hosts_are_compared_in_canonical_form_so_nothing_rotates_forever() -> None:
    hosts = tuple(normal_host(h) for h in ("0:0::1", "Lahar-Webhook.lahar-system.SVC"))
    options = CertOptions(hosts=hosts, ca_validity=300 * DAY)
    bundle = _step(None, T0)
    bundle = next_bundle(bundle, options, T0)  # names added
    assert bundle is not None and next_bundle(bundle, options, T0) is None
    with pytest.raises(ValueError, match="neither an IP address nor a DNS name"):
        normal_host("bad host!")


def test_names_a_certificate_had_are_kept_so_replicas_converge() -> None:
    one = CertOptions(hosts=("a.svc",), ca_validity=300 * DAY)
    other = CertOptions(hosts=("b.svc",), ca_validity=300 * DAY)
    bundle = _step(None, T0)
    bundle = next_bundle(bundle, one, T0) or bundle
    bundle = next_bundle(bundle, other, T0) or bundle
    assert next_bundle(bundle, one, T0) is None and next_bundle(bundle, other, T0) is None


def _client(bundle: Bundle, stored: ClientPair | None, at: datetime.datetime) -> ClientPair:
    following = next_client_pair(stored, bundle, "lahar-scheduler", OPTIONS, at)
    assert following is not None
    return following


def test_the_client_certificate_names_the_scheduler_for_client_auth_only() -> None:
    bundle = _step(None, T0)
    pair = _client(bundle, None, T0)
    cert = _cert(pair.cert)
    cert.verify_directly_issued_by(_cert(bundle.ca_cert))
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert [n.value for n in names] == ["lahar-scheduler"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert pair.trusted == bundle.trusted
    assert ClientPair.from_data(pair.to_data()) == pair


@pytest.mark.parametrize(
    ("case", "renewed"),
    [
        ("current", False),
        ("in its last third", True),
        ("signed by another CA", True),
        ("issued to someone else", True),
    ],
)
def test_the_client_certificate_is_renewed_only_when_it_must_be(case: str, renewed: bool) -> None:
    bundle = _step(None, T0)
    pair = _client(bundle, None, T0)
    at = T0 + DAY
    if case == "in its last third":
        at = T0 + 21 * DAY
        bundle = _step(bundle, at)
    elif case == "signed by another CA":
        bundle = _step(None, T0)  # a bundle whose serving certificate another CA signed
    elif case == "issued to someone else":
        pair = next_client_pair(None, bundle, "someone", OPTIONS, T0) or pair
    following = next_client_pair(pair, bundle, "lahar-scheduler", OPTIONS, at)
    assert (following is not None) is renewed
    if following is not None:
        _cert(following.cert).verify_directly_issued_by(_cert(bundle.ca_cert))


def test_the_client_certificate_moves_to_a_new_ca_with_the_serving_certificate() -> None:
    bundle = _step(None, T0)
    pair = _client(bundle, None, T0 + 200 * DAY)
    at = T0 + 201 * DAY  # the CA's last third: a new CA is trusted beside the old one
    rotated = next_bundle(bundle, OPTIONS, at)
    assert rotated is not None and rotated.ca_cert != bundle.ca_cert
    assert rotated.cert == bundle.cert  # still served from the old CA during the grace
    following = next_client_pair(pair, rotated, "lahar-scheduler", OPTIONS, at)
    assert following is not None
    assert following.cert == pair.cert  # the same certificate: the server has not moved yet
    assert following.trusted == rotated.trusted  # but the new CA is trusted
    later = at + OPTIONS.grace + DAY
    moved = _step(rotated, later)
    assert _cert(moved.cert).issuer == _cert(moved.ca_cert).subject  # the server moved
    renewed = _client(moved, following, later)
    _cert(renewed.cert).verify_directly_issued_by(_cert(moved.ca_cert))
    assert next_client_pair(renewed, moved, "lahar-scheduler", OPTIONS, later) is None


def test_a_damaged_client_secret_reads_as_nothing_stored() -> None:
    pair = _client(_step(None, T0), None, T0)
    assert ClientPair.from_data({**pair.to_data(), "tls.key": b"junk"}) is None
    assert ClientPair.from_data({}) is None


def test_service_hosts_name_the_service_every_way_a_pod_reaches_it() -> None:
    assert service_hosts("lahar-extender", "lahar-system", ["10.0.0.1"]) == (
        "lahar-extender.lahar-system.svc",
        "lahar-extender.lahar-system",
        "lahar-extender",
        "lahar-extender.lahar-system.svc.cluster.local",
        "10.0.0.1",
    )
    with pytest.raises(ValueError, match="neither an IP address nor a DNS name"):
        service_hosts("lahar-extender", "lahar-system", ["bad host"])
