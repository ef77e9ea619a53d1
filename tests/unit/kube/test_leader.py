"""One attempt at the Lease: a call that never reached the API server (a reset connection, the
API server restarting) is a failed attempt the elector retries until its renew deadline, not an
exception that ends the election (and with it the process). A refusal is a problem to report
only when it is the operator's to fix (401, 403, 404), not the API server's passing trouble (5xx,
429)."""

from __future__ import annotations

from typing import Any

import pytest
import urllib3
from kubernetes.client import ApiException
from kubernetes.leaderelection import electionconfig
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from extender.kube.leader import _Election, _RecordedCalls


class Unreachable:
    """A Lease API whose every call fails as a cut connection does."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def read_namespaced_lease(self, name: str, namespace: str, **options: Any) -> Any:
        self.calls += 1
        assert options["_request_timeout"] == 5.0  # never a call without a bound
        raise self.error


def _config(calls: _RecordedCalls) -> electionconfig.Config:
    lock = LeaseLock("lahar-controller", "lahar-system", "me")
    lock.api_instance = calls
    return electionconfig.Config(
        lock,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        onstarted_leading=lambda: None,
        onstopped_leading=lambda: None,
    )


@pytest.mark.parametrize(
    "error",
    [
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
        urllib3.exceptions.MaxRetryError(None, "/apis", "Connection refused"),  # type: ignore[arg-type]
        ConnectionResetError(104, "Connection reset by peer"),
        ApiException(status=503, reason="Service Unavailable"),
        ApiException(status=500, reason="etcdserver: leader changed"),
        ApiException(status=429, reason="Too Many Requests"),
    ],
    ids=["protocol error", "refused", "reset", "503", "500", "429"],
)
def test_an_unreachable_api_server_is_a_failed_attempt(error: Exception) -> None:
    api = Unreachable(error)
    calls = _RecordedCalls(api, 5.0)  # type: ignore[arg-type]
    seen: list[object] = []
    election = _Election(_config(calls), calls, seen.append)
    assert election.try_acquire_or_renew() is False
    assert election.try_acquire_or_renew() is False
    assert api.calls == 2
    assert seen == []  # nothing the operator must fix: no Lease problem to report


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refusal_the_operator_must_fix_is_reported(status: int) -> None:
    api = Unreachable(ApiException(status=status, reason="Forbidden"))
    calls = _RecordedCalls(api, 5.0)  # type: ignore[arg-type]
    seen: list[ApiException | None] = []
    election = _Election(_config(calls), calls, seen.append)
    assert election.try_acquire_or_renew() is False
    if status == 404:  # (reading a Lease not created yet: the elector creates it next)
        assert seen == [None]
    else:
        assert [e.status for e in seen if e is not None] == [status]
