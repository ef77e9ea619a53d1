"""Keeping the certificates' Secret (`secret.keep`) against a fake API server: what happens to it
is a value. Missing: this replica creates it; another replica created it first: this one serves
theirs and writes nothing; present and right: nothing is written; due: replaced, and a replace
that conflicts reads again. And the watch's reading of event lines."""

from __future__ import annotations

import datetime

import pytest

from extender.kube.client import KubeError
from extender.pki import Bundle, CertOptions, next_bundle
from extender.webhook.secret import ATTEMPTS, Outcome, event_version, keep
from tests.unit.webhook.fake_secret import FakeSecret

OPTIONS = CertOptions(hosts=("lahar-webhook.lahar-system.svc",))
NOW = datetime.datetime.now(datetime.UTC)


def step(data: dict[str, bytes] | None) -> dict[str, bytes] | None:
    """The webhook's step: one rotation step of what is stored, now."""
    following = next_bundle(Bundle.from_data(data or {}), OPTIONS, NOW)
    return None if following is None else following.to_data()


def new_bundle() -> dict[str, bytes]:
    data = step(None)
    assert data is not None
    return data


def test_a_missing_secret_is_created() -> None:
    secret = FakeSecret()

    kept = keep(secret, step)

    assert kept.outcome is Outcome.CREATED
    assert secret.writes == ["create"]
    assert kept.data == secret.data
    assert Bundle.from_data(kept.data) is not None


def test_a_create_that_conflicts_serves_what_the_other_replica_wrote() -> None:
    theirs = new_bundle()
    secret = FakeSecret()

    def other_replica_first() -> None:
        if secret.secret is None:
            secret.store(theirs)

    secret.before_write = other_replica_first

    kept = keep(secret, step)

    assert kept.outcome is Outcome.ADOPTED
    assert kept.data == theirs
    assert secret.writes == []  # (this replica's certificates were never stored)
    assert secret.data == theirs


def test_a_secret_present_and_right_is_left_alone() -> None:
    stored = new_bundle()
    secret = FakeSecret(stored)

    kept = keep(secret, step)

    assert (kept.outcome, kept.data, secret.writes) == (Outcome.UNCHANGED, stored, [])


def test_an_empty_secret_is_filled_and_a_replace_that_conflicts_reads_again() -> None:
    secret = FakeSecret({})  # as the manifests ship it
    theirs = new_bundle()

    def other_replica_once() -> None:
        secret.before_write = lambda: None
        secret.store(theirs)

    secret.before_write = other_replica_once

    kept = keep(secret, step)

    assert (kept.outcome, kept.data, secret.writes) == (Outcome.UNCHANGED, theirs, [])
    secret = FakeSecret({})
    kept = keep(secret, step)
    assert (kept.outcome, secret.writes) == (Outcome.REPLACED, ["replace"])


def test_a_secret_that_keeps_changing_is_an_error_after_some_attempts() -> None:
    secret = FakeSecret({})
    secret.before_write = lambda: secret.store({})  # another writer, every time

    with pytest.raises(KubeError, match="kept changing"):
        keep(secret, step)
    assert secret.version == 1 + ATTEMPTS


def test_watch_event_lines_give_their_type_and_version() -> None:
    deleted = b'{"type":"DELETED","object":{"kind":"Secret","metadata":{"resourceVersion":"42"}}}'
    assert event_version(deleted) == ("DELETED", "42")
    assert event_version(b'{"type":"BOOKMARK","object":{"metadata":{}}}') == ("BOOKMARK", "")
    with pytest.raises(ValueError, match="not a watch event"):
        event_version(b"[]")
    with pytest.raises(ValueError, match="Expecting value"):  # (json's JSONDecodeError)
        event_version(b"not json")
