"""The history of finished runs in the cluster: the ConfigMap `lahar-system/lahar-run-times`,
key `runs.json` (its format and bounds are `api.run_times.RunHistory`'s).

`read_history` never fails a caller over it: the history only sharpens run-time estimates, so a
missing ConfigMap, one it may not read or one whose content is bad is an empty history and the
one-line reason. `record` merges finished runs into what is stored by get, add and update at the
resourceVersion read: when another writer changed the ConfigMap in between (409), or created it
first, it reads again and merges again, so no writer's runs are lost; it gives up after a few
rounds with a `KubeError` naming the ConfigMap. A stored document that cannot be read is replaced
by the runs being recorded, and `record` returns the reason, for its caller to log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubernetes import client as k8s

from extender.api.run_times import (
    HISTORY_KEY,
    HISTORY_NAME,
    HISTORY_NAMESPACE,
    RunHistory,
    parse_history,
)
from extender.kube import writes
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError

Run = tuple[str, str, float, float]  # owner, queue, seconds, finished at (epoch seconds)
ATTEMPTS = 5  # rounds of read, merge and write before another writer is deemed to starve this one
LABELS = {"app.kubernetes.io/part-of": "lahar", "app.kubernetes.io/component": "run-times"}


def read_history(
    api: k8s.ApiClient, *, namespace: str = HISTORY_NAMESPACE, name: str = HISTORY_NAME
) -> tuple[RunHistory, str | None]:
    """The stored history, or an empty one and why there is none to use."""
    where = f"ConfigMap {namespace}/{name}"
    try:
        stored = writes.get(api, "v1", "ConfigMap", namespace, name)
    except KubeError as error:  # the server refused (403 above all: the rights are optional)
        return RunHistory(), f"{where} not read, run history unused: {error}"
    if stored is None:
        return RunHistory(), f"{where} does not exist: no finished runs recorded yet"
    return _history(stored, where)


def record(
    api: k8s.ApiClient,
    runs: Iterable[Run],
    *,
    namespace: str = HISTORY_NAMESPACE,
    name: str = HISTORY_NAME,
) -> str | None:
    """Add `runs` to the stored history (creating the ConfigMap when there is none); return why
    the stored content was unreadable and replaced, if it was. A negative or infinite run time is
    a ValueError, raised before anything is written."""
    runs = tuple(runs)
    if not runs:
        return None
    _added(RunHistory(), runs)  # refuses a bad run before any write
    where = f"ConfigMap {namespace}/{name}"
    for _ in range(ATTEMPTS):
        stored = writes.get(api, "v1", "ConfigMap", namespace, name)
        if stored is None:
            if writes.create(api, _config_map(namespace, name, _added(RunHistory(), runs))):
                return None
            continue  # another writer created it meanwhile: merge into theirs
        history, problem = _history(stored, where)
        if HISTORY_KEY not in (stored.get("data") or {}):
            problem = None  # nothing stored there: nothing replaced
        body = {
            **stored,
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {**(stored.get("data") or {}), HISTORY_KEY: _added(history, runs).dump()},
        }
        try:
            writes.replace(api, body)
        except ApiStatusError as error:
            if error.status in (404, 409):  # deleted or changed since read: read again
                continue
            raise
        return problem
    raise KubeError(f"{where} kept changing under this writer: {len(runs)} runs not recorded")


def _history(stored: dict[str, Any], where: str) -> tuple[RunHistory, str | None]:
    text = (stored.get("data") or {}).get(HISTORY_KEY)
    if text is None:
        return RunHistory(), f"{where} has no key {HISTORY_KEY}"
    history, problem = parse_history(text)
    return history, f"{where}: {problem}" if problem else None


def _added(history: RunHistory, runs: tuple[Run, ...]) -> RunHistory:
    for owner, queue, seconds, finished_at in runs:
        history = history.add(owner, queue, seconds, finished_at)
    return history


def _config_map(namespace: str, name: str, history: RunHistory) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
        "data": {HISTORY_KEY: history.dump()},
    }
