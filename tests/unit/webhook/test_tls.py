"""The served certificate over a fake Secret and fake webhook configurations: a deleted Secret is
written again with new certificates, the caBundle becomes its CA alone and one INFO line says
so; a replica that lost the race serves the winner's; the caBundle keeps a CA another replica
added from a newer Secret, never one the Secret dropped (files given by flags keep them all)."""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Callable, Iterator

import pytest
from cryptography import x509
from kubernetes import client as k8s

from extender.pki import CA_CERT, TRUSTED, CertOptions, new_ca, next_bundle
from extender.webhook import tls as tls_module
from extender.webhook.tls import ServingCertificate, TlsOptions, published_cas
from tests.unit.webhook.fake_secret import FakeSecret

CONFIGURATIONS = (
    ("MutatingWebhookConfiguration", "lahar-webhook"),
    ("ValidatingWebhookConfiguration", "lahar-webhook"),
)
OPTIONS = TlsOptions(
    CertOptions(hosts=("lahar-webhook.lahar-system.svc",)), configurations=CONFIGURATIONS
)
NOW = datetime.datetime.now(datetime.UTC)
DELETED = (
    "secret lahar-system/lahar-webhook-tls was deleted: wrote new certificates, "
    "caBundle republished"
)


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """The caBundle of each fake webhook configuration, by kind."""
    bundles: dict[str, bytes] = {}

    def set_ca_bundle(
        api: object, kind: str, name: str, bundle_for: Callable[[bytes], bytes]
    ) -> bool:
        before = bundles.get(kind, b"")
        bundles[kind] = bundle_for(before)
        return bundles[kind] != before

    monkeypatch.setattr(tls_module, "set_ca_bundle", set_ca_bundle)
    return bundles


@pytest.fixture
def api() -> Iterator[k8s.ApiClient]:
    client = k8s.ApiClient()  # (never called: the Secret and configurations are fakes)
    yield client
    client.close()


@contextlib.contextmanager
def serving(api: k8s.ApiClient, secret: FakeSecret) -> Iterator[ServingCertificate]:
    tls = ServingCertificate(api, OPTIONS, secret=secret)
    try:
        yield tls
    finally:
        tls.close()


def test_a_deleted_secret_is_written_again_and_its_ca_alone_published(
    api: k8s.ApiClient, published: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    secret = FakeSecret({})  # as the manifests ship it
    with serving(api, secret) as tls:
        tls.install(tls.refresh())
        first = secret.data
        assert first is not None

        secret.delete()
        caplog.clear()
        caplog.set_level(logging.INFO, "extender.webhook")
        tls.install(tls.refresh())

        again = secret.data
        assert again is not None and again[CA_CERT] != first[CA_CERT]
        assert secret.writes == ["replace", "create"]
        assert set(published) == {kind for kind, _ in CONFIGURATIONS}
        assert all(bundle == again[TRUSTED] == again[CA_CERT] for bundle in published.values())
        assert tls.serving is not None and tls.serving.cert == again["tls.crt"]
        assert DELETED in caplog.messages
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_replica_that_lost_the_race_serves_the_winners_certificate(
    api: k8s.ApiClient, published: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    loser = FakeSecret({})
    with serving(api, loser) as tls:
        tls.install(tls.refresh())
        loser.delete()
        # What the other replica wrote first, after the deletion (so its CA is the newer).
        theirs = next_bundle(None, OPTIONS.certs, datetime.datetime.now(datetime.UTC))
        assert theirs is not None
        loser.before_write = lambda: loser.store(theirs.to_data()) if loser.secret is None else None
        caplog.set_level(logging.INFO, "extender.webhook")
        tls.install(tls.refresh())

        assert loser.data == theirs.to_data()
        assert loser.writes == ["replace"]  # (filling the shipped Secret; never its own create)
        assert tls.serving is not None and tls.serving.cert == theirs.cert
        assert all(bundle == theirs.trusted for bundle in published.values())
        assert (
            "secret lahar-system/lahar-webhook-tls was deleted: another replica wrote new "
            "certificates first; serving them, caBundle republished"
        ) in caplog.messages


def test_a_secret_unchanged_writes_nothing_and_logs_nothing(
    api: k8s.ApiClient, published: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    secret = FakeSecret({})
    with serving(api, secret) as tls:
        tls.install(tls.refresh())
        before, bundles = secret.version, dict(published)
        caplog.set_level(logging.INFO, "extender.webhook")
        caplog.clear()

        assert tls.install(tls.refresh()) is False

        assert (secret.version, published) == (before, bundles)
        assert caplog.messages == []


def _ca(days_ago: int, days_left: int = 365) -> x509.Certificate:
    """A CA issued `days_ago`, ending in `days_left` (negative: ended)."""
    start = NOW - datetime.timedelta(days=days_ago)
    cert, _ = new_ca(f"ca-{days_ago}", NOW + datetime.timedelta(days=days_left), start)
    return cert


def test_the_cabundle_keeps_newer_cas_and_drops_older_and_expired_ones() -> None:
    older, ours, newer, expired = _ca(30), _ca(10), _ca(1), _ca(5, days_left=-1)

    assert published_cas([ours], [older, newer, expired, ours], NOW) == [ours, newer]
    assert published_cas([ours], [], NOW) == [ours]
    # Files given by flags: each replica's kubelet updates them in its own time.
    assert published_cas([ours], [older, newer, expired], NOW, older=True) == [
        ours,
        older,
        newer,
    ]
