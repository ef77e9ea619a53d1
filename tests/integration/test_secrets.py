"""`kube.secrets.settle` against the real API server: it creates a missing Secret, leaves a right
one alone, and when another writer changes the Secret between its read and its write it reads
again and settles on what that writer stored (the race every replica of the webhook and every
start of the extender's certificate issuer runs)."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from extender.kube import KubeError, read
from extender.kube.secrets import secret_data, settle, write_secret

LABELS = {"app.kubernetes.io/part-of": "lahar-test"}


def test_a_missing_secret_is_created_and_a_right_one_left_alone(
    api: k8s.ApiClient, namespace: str
) -> None:
    def fill(data: dict[str, bytes] | None) -> dict[str, bytes] | None:
        return None if data and data.get("k") == b"v" else {"k": b"v"}

    assert settle(api, namespace, "s", fill, labels=LABELS) == ({"k": b"v"}, True)
    version = (read(api, "v1", "Secret", "s", namespace) or {})["metadata"]["resourceVersion"]
    assert settle(api, namespace, "s", fill, labels=LABELS) == ({"k": b"v"}, False)
    after = (read(api, "v1", "Secret", "s", namespace) or {})["metadata"]["resourceVersion"]
    assert after == version


def test_a_writer_that_loses_the_race_settles_on_the_winners_data(
    api: k8s.ApiClient, namespace: str
) -> None:
    calls: list[dict[str, bytes] | None] = []

    def step(data: dict[str, bytes] | None) -> dict[str, bytes] | None:
        calls.append(data)
        if len(calls) == 1:  # another replica writes between this read and this write
            write_secret(api, namespace, "s", {"k": b"theirs"}, stored=None, labels=LABELS)
            return {"k": b"ours"}
        return None if data else {"k": b"ours"}  # anything stored will do

    assert settle(api, namespace, "s", step, labels=LABELS) == ({"k": b"theirs"}, False)
    assert calls == [None, {"k": b"theirs"}]
    stored = read(api, "v1", "Secret", "s", namespace) or {}
    assert secret_data(stored) == {"k": b"theirs"}


def test_nothing_to_fill_a_missing_secret_with_is_an_error_naming_it(
    api: k8s.ApiClient, namespace: str
) -> None:
    with pytest.raises(KubeError, match=f"Secret {namespace}/s is missing"):
        settle(api, namespace, "s", lambda data: None, labels=LABELS)
