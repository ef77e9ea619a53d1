"""`kube.run_times` against the real API server: the first record creates the ConfigMap, a writer
that another writer overtakes between its read and its update (or its create) reads again and
keeps both writers' runs, the bounds hold in what is stored, and what cannot be read (bad content,
no right to read) is an empty history with the reason, never a failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from extender.api.run_times import HISTORY_KEY, HISTORY_NAME, OWNER_RUNS, OWNERS, RunHistory
from extender.kube import apply_object, connect, read
from extender.kube import run_times as store
from extender.kube.run_times import read_history, record
from extender.kube.tokens import service_account_token

T0 = 1_900_000_000.0


def _stored(api: k8s.ApiClient, namespace: str) -> dict[str, Any]:
    found = read(api, "v1", "ConfigMap", HISTORY_NAME, namespace)
    assert found is not None
    return found


def _overtaken_once(
    monkeypatch: pytest.MonkeyPatch, api: k8s.ApiClient, namespace: str, theirs: store.Run
) -> list[dict[str, Any] | None]:
    """Make another writer record `theirs` right after this writer's first read (so this
    writer's update, or create, meets a changed ConfigMap); the reads this writer made."""
    real_get = store.writes.get
    reads: list[dict[str, Any] | None] = []

    def get_then_overtaken(*args: Any) -> dict[str, Any] | None:
        stored = real_get(*args)
        reads.append(stored)
        if len(reads) == 1:
            monkeypatch.setattr(store.writes, "get", real_get)  # the other writer reads plainly
            record(api, [theirs], namespace=namespace)
            monkeypatch.setattr(store.writes, "get", get_then_overtaken)
        return stored

    monkeypatch.setattr(store.writes, "get", get_then_overtaken)
    return reads


def test_the_first_record_creates_the_config_map(api: k8s.ApiClient, namespace: str) -> None:
    history, reason = read_history(api, namespace=namespace)
    assert history == RunHistory()
    assert (
        reason
        == f"ConfigMap {namespace}/{HISTORY_NAME} does not exist: no finished runs recorded yet"
    )

    assert (
        record(api, [("ns/a", "q", 600, T0), ("ns/a", "q", 900, T0 + 1)], namespace=namespace)
        is None
    )

    stored = _stored(api, namespace)
    assert stored["metadata"]["labels"]["app.kubernetes.io/part-of"] == "lahar"
    history, reason = read_history(api, namespace=namespace)
    assert reason is None
    assert history.samples("ns/a", "q") == ((600.0, 900.0), "owner")


@pytest.mark.parametrize("existing", [True, False], ids=["on update", "on create"])
def test_a_writer_overtaken_between_read_and_write_keeps_both_writers_runs(
    api: k8s.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    if existing:
        record(api, [("ns/first", "q", 60, T0)], namespace=namespace)
    reads = _overtaken_once(monkeypatch, api, namespace, ("ns/theirs", "q", 120, T0 + 1))

    record(api, [("ns/ours", "q", 180, T0 + 2)], namespace=namespace)

    assert len(reads) == 2  # the write met a changed (or a new) ConfigMap and read again
    assert (reads[0] is not None) == existing
    history, reason = read_history(api, namespace=namespace)
    assert reason is None
    assert history.samples("ns/theirs", "q") == ((120.0,), "owner")
    assert history.samples("ns/ours", "q") == ((180.0,), "owner")
    assert history.queues["q"].runs == ((60.0,) if existing else ()) + (120.0, 180.0)


def test_what_is_stored_keeps_within_the_bounds(api: k8s.ApiClient, namespace: str) -> None:
    runs = [(f"ns/j{n}", "q", 60.0 + n, T0 + n) for n in range(OWNERS + 8)]
    runs += [("ns/busy", "q", float(n), T0 + OWNERS + 8 + n) for n in range(OWNER_RUNS + 4)]
    record(api, runs[: len(runs) // 2], namespace=namespace)
    record(api, runs[len(runs) // 2 :], namespace=namespace)

    stored = json.loads(_stored(api, namespace)["data"][HISTORY_KEY])
    assert len(stored["owners"]) == OWNERS
    assert {f"ns/j{n}" for n in range(9)}.isdisjoint(stored["owners"])  # the oldest went
    assert stored["owners"]["ns/busy"]["runs"] == [float(n) for n in range(4, OWNER_RUNS + 4)]
    assert len(stored["queues"]["q"]["runs"]) == 64


def test_bad_content_reads_as_an_empty_history_and_the_next_record_replaces_it(
    api: k8s.ApiClient, namespace: str
) -> None:
    apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": HISTORY_NAME, "namespace": namespace},
            "data": {HISTORY_KEY: '{"owners": {"ns/a": {"queue": "q", "runs": [60]}}}', "x": "y"},
        },
    )
    history, reason = read_history(api, namespace=namespace)
    assert history == RunHistory()
    assert reason == (
        f"ConfigMap {namespace}/{HISTORY_NAME}: {HISTORY_KEY}: owners.ns/a.finished: Field required"
    )

    assert record(api, [("ns/b", "q", 60, T0)], namespace=namespace) == reason

    history, reason = read_history(api, namespace=namespace)
    assert reason is None
    assert history.samples("ns/b", "q") == ((60.0,), "owner")
    assert _stored(api, namespace)["data"]["x"] == "y"  # other keys are left as they were


def test_no_right_to_read_is_an_empty_history_and_the_reason(
    api: k8s.ApiClient, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    record(api, [("ns/a", "q", 60, T0)], namespace=namespace)
    token = service_account_token(api, namespace, "default", 600)  # bound to no Role
    config = yaml.safe_load(kubeconfig.read_text())
    config["users"] = [{"name": "default", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "default"
    path = tmp_path / "default.kubeconfig"
    path.write_text(yaml.safe_dump(config))

    with connect(path) as unprivileged:
        history, reason = read_history(unprivileged, namespace=namespace)

    assert history == RunHistory()
    assert reason is not None
    assert reason.startswith(f"ConfigMap {namespace}/{HISTORY_NAME} not read, run history unused")
    assert "HTTP 403" in reason
