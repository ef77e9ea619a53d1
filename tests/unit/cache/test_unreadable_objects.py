"""An object Lahar cannot read (a field of a type its CRD's schema, or no webhook, let through) is
its author's mistake: the informer skips it with one WARNING line naming the object and the field,
and applies the others; never an ERROR. Watched and listed alike."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.log_fields import SUBJECT
from extender.cache import informer as informer_module
from extender.cache.informer import PODS, QUEUES, Informer
from extender.cache.state import ClusterState
from tests.builders import make_pod, make_queue


def _lines(*events: dict[str, Any]) -> Iterator[bytes]:
    for event in events:
        yield json.dumps(event, separators=(",", ":")).encode()


def _pod(name: str, cpu: str) -> dict[str, Any]:
    pod = make_pod(name).uid(name).cpu(cpu).build()
    return {"kind": "Pod", "apiVersion": "v1", **pod}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_watched_object_lahar_cannot_read_is_one_warning_naming_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sent = _lines(
        {"type": "ADDED", "object": _pod("bad", "lots")},
        {"type": "ADDED", "object": _pod("good", "1")},
    )
    monkeypatch.setattr(informer_module, "watch_lines", lambda *args, **kwargs: sent)
    loop = asyncio.new_event_loop()
    state = ClusterState()
    following = Informer(k8s.ApiClient(), PODS, state, loop)
    with caplog.at_level(logging.INFO, logger="extender.cache.informer"):
        following._watch("10")
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()
    assert set(state.pods) == {"good"}
    [warning] = _warnings(caplog)
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    said = warning.getMessage()
    assert said.startswith("watch of pods: skipping default/bad, which Lahar cannot read: ")
    assert "cpu: invalid quantity 'lots'" in said
    assert getattr(warning, SUBJECT) == {"kind": "Pod", "namespace": "default", "name": "bad"}


@pytest.mark.parametrize(
    ("item", "named", "subject"),
    [
        pytest.param(
            make_queue("research").set("spec.weight", "heavy").build(),
            "research",
            {"kind": "Queue", "name": "research"},
            id="named",
        ),
        pytest.param({"metadata": 3, "spec": []}, "?", None, id="not even named"),
    ],
)
def test_a_listed_object_lahar_cannot_read_is_one_warning_naming_it(
    item: dict[str, Any],
    named: str,
    subject: dict[str, str] | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.new_event_loop()
    listing = Informer(k8s.ApiClient(), QUEUES, ClusterState(), loop)
    good = make_queue("default").build()
    with caplog.at_level(logging.INFO, logger="extender.cache.informer"):
        decoded = list(listing._decode_all([item, good]))
    loop.close()
    assert [queue.metadata.name for queue in decoded] == ["default"]
    [warning] = _warnings(caplog)
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    assert warning.getMessage().startswith(f"skipping queues {named}, which Lahar cannot read: ")
    assert getattr(warning, SUBJECT, None) == subject
