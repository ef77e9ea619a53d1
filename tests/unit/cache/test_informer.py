"""What an informer makes of the lines of a watch: an event is applied and moves the version; a
BOOKMARK (no object, only the version the watch reached) moves the version and is not mistaken
for an object Lahar cannot read (the lines are as kube-apiserver 1.35 writes them). The real API
server's bookmarks are in tests/integration/test_cache.py."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.cache import informer as informer_module
from extender.cache.informer import Informer
from extender.cache.kinds import COSCHEDULING_GROUPS, PODS, PROVISIONING_REQUESTS
from extender.cache.state import ClusterState
from extender.kube.raw import ApiStatusError
from tests.builders import make_pod


def _lines(*events: dict[str, Any]) -> Iterator[bytes]:
    for event in events:
        yield json.dumps(event, separators=(",", ":")).encode()


def test_a_bookmark_moves_the_version_and_is_no_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pod = make_pod("p").uid("u1").cpu("1").build()
    pod["metadata"]["resourceVersion"] = "11"
    bookmark = {  # as kube-apiserver 1.35 sends it
        "type": "BOOKMARK",
        "object": {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "17"},
            "spec": {"containers": None},
            "status": {},
        },
    }
    sent = _lines({"type": "ADDED", "object": pod}, bookmark)
    monkeypatch.setattr(informer_module, "watch_lines", lambda *args, **kwargs: sent)
    loop = asyncio.new_event_loop()
    state = ClusterState()
    following = Informer(k8s.ApiClient(), PODS, state, loop)
    with caplog.at_level(logging.WARNING, logger="extender.cache.informer"):
        following._watch("10")
    loop.run_until_complete(asyncio.sleep(0))  # the event, applied on the loop
    loop.close()
    assert following.version == "17" and following.bookmarks == 1
    assert "u1" in state.pods
    assert caplog.text == ""


def test_a_kind_listed_before_is_dropped_only_when_its_404s_last() -> None:
    """An optional kind answering 404 before its first list is not served: empty at once. Once
    listed, a 404 is what an API server that has just restarted says of a CRD's objects until it
    has read the CRDs again: the kind is dropped only when the 404s last `absent_recheck`."""
    loop = asyncio.new_event_loop()
    following = Informer(k8s.ApiClient(), COSCHEDULING_GROUPS, ClusterState(), loop)
    not_found, failed = ApiStatusError("not found", 404), ApiStatusError("unavailable", 503)
    assert following._not_served(not_found)  # never listed: not served
    following.synced = True  # listed once
    assert not following._not_served(not_found)
    assert not following._not_served(failed)  # another error: the 404s start again
    assert not following._not_served(not_found)
    following.absent_recheck = 0.0
    assert following._not_served(not_found)
    assert not Informer(k8s.ApiClient(), PODS, ClusterState(), loop)._not_served(not_found)
    # A role that does not grant the kind yet (an upgrade whose RBAC was not applied): going on
    # without it beats never serving.
    forbidden = ApiStatusError("forbidden", 403)
    assert Informer(k8s.ApiClient(), PROVISIONING_REQUESTS, ClusterState(), loop)._not_served(
        forbidden
    )
    assert not Informer(k8s.ApiClient(), PODS, ClusterState(), loop)._not_served(forbidden)
    loop.close()
