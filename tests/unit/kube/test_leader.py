"""One attempt at the Lease: a call that never reached the API server (a reset connection, the
API server restarting) is a failed attempt the elector retries until its renew deadline, not an
exception that ends the election (and with it the process)."""

from __future__ import annotations

from typing import Any

import pytest
import urllib3
from kubernetes.leaderelection import electionconfig
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from extender.kube.leader import _Election, _RecordedCalls


class Unreachable:
    """A Lease API whose every call fails as a cut connection does."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def read_namespaced_lease(self, name: str, namespace: str) -> Any:
        self.calls += 1
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
        urllib3.exceptions.MaxRetryError(None, "/apis", "Connection refused"),  # type: ignore[arg-type]
        ConnectionResetError(104, "Connection reset by peer"),
    ],
    ids=["protocol error", "refused", "reset"],
)
def test_an_unreachable_api_server_is_a_failed_attempt(error: Exception) -> None:
    api = Unreachable(error)
    calls = _RecordedCalls(api)  # type: ignore[arg-type]
    lock = LeaseLock("lahar-controller", "lahar-system", "me")
    lock.api_instance = calls
    config = electionconfig.Config(
        lock,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        onstarted_leading=lambda: None,
        onstopped_leading=lambda: None,
    )
    seen: list[object] = []
    election = _Election(config, calls, seen.append)
    assert election.try_acquire_or_renew() is False
    assert election.try_acquire_or_renew() is False
    assert api.calls == 2
    assert seen == []  # not a refusal by the API server: no Lease problem to report
