"""The controller's probes, on a real aiohttp test server: with an API server it cannot reach, its
cache never syncs, so it is alive but not ready, saying why; /metrics has its registry.

Ready means able to serve if it led: a standby whose cache is whole and whose Lease it can read is
ready, as the leader is; one the API server will not let read its Lease, or that has not read it
for a whole lease duration, is not. `lahar_leader` says who leads: 1 on the leader, 0 on a
standby. The elector is a stand-in that reports what the API server would (the real one runs
against a real API server in tests/e2e); the cache's sync is set by hand."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from kubernetes import client as k8s

from extender.controller.app import ControllerOptions, make_app
from extender.devcluster.ports import free_ports
from extender.kube.leader import LeaseOptions, LeaseProblem
from extender.shell import SHELL, lease

LEASE = LeaseOptions("lahar-controller", "lahar-system", "me")
LEADER = 'lahar_leader{component="controller",lease="lahar-system/lahar-controller"}'


@pytest.fixture
def unreachable() -> Iterator[k8s.ApiClient]:
    """A client of an API server that is not there (a port nothing listens on)."""
    (port,) = free_ports(1)
    client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{port}"))
    yield client
    client.close()


def test_alive_but_not_ready_until_its_cache_syncs(unreachable: k8s.ApiClient) -> None:
    async def main() -> None:
        app = make_app(unreachable, ControllerOptions(workers=1))
        async with TestClient(TestServer(app)) as client:
            health = await client.get("/healthz")
            assert (health.status, await health.text()) == (200, "ok")
            ready = await client.get("/readyz")
            assert ready.status == 503
            assert await ready.text() == "leading: cache not synced"  # (no Lease: it leads)
            metrics = await (await client.get("/metrics")).text()
            assert "lahar_controller_jobs 0.0" in metrics
            assert 'lahar_leader{component="controller",lease=""} 1.0' in metrics

    asyncio.run(main())


def _elector(*problems: LeaseProblem | None) -> type:
    class Elector:
        """Never leads by itself; reports `problems` (one outcome an attempt each) on start."""

        def __init__(
            self,
            api: Any,
            options: LeaseOptions,
            leading: asyncio.Event,
            on_lost: Callable[[], None],
            on_problem: Callable[[LeaseProblem | None], None],
        ) -> None:
            self.on_problem = on_problem

        def start(self) -> None:
            for problem in problems:
                asyncio.get_running_loop().call_soon(self.on_problem, problem)

    return Elector


async def _readyz(client: TestClient[Any, Any]) -> tuple[int, str]:
    answer = await client.get("/readyz")
    return answer.status, await answer.text()


async def _leader(client: TestClient[Any, Any]) -> str:
    """The line of `lahar_leader` in /metrics."""
    metrics = await (await client.get("/metrics")).text()
    return next(line for line in metrics.splitlines() if line.startswith(LEADER))


def test_a_standby_with_a_whole_cache_and_a_readable_lease_is_ready(
    unreachable: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another replica holds the Lease (the attempt read it, no refusal): ready once synced."""
    monkeypatch.setattr(lease, "Elector", _elector(None))

    async def main() -> None:
        app = make_app(unreachable, ControllerOptions(workers=1, lease=LEASE))
        shell = app[SHELL]
        async with TestClient(TestServer(app)) as client:
            await asyncio.sleep(0.01)  # (the attempt's outcome, on the loop)
            assert await _readyz(client) == (503, "standby: cache not synced")
            shell.synced.set()  # every kind listed
            assert await _readyz(client) == (200, "ok")
            assert not shell.leading.is_set()
            assert await _leader(client) == f"{LEADER} 0.0"
            shell.leading.set()  # it takes the Lease
            assert await _readyz(client) == (200, "ok")
            assert await _leader(client) == f"{LEADER} 1.0"

    asyncio.run(main())


def test_a_standby_that_cannot_read_its_lease_is_not_ready(
    unreachable: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lease's namespace does not exist: not ready however whole its cache, saying why and
    what fixes it."""
    missing = LeaseProblem("lahar-system", "lahar-controller", 404, "not found")
    monkeypatch.setattr(lease, "Elector", _elector(missing))

    async def main() -> None:
        app = make_app(unreachable, ControllerOptions(workers=1, lease=LEASE))
        async with TestClient(TestServer(app)) as client:
            await asyncio.sleep(0.01)
            app[SHELL].synced.set()
            status, why = await _readyz(client)
            assert status == 503
            assert why.startswith(
                "not leading: this controller cannot take Lease lahar-system/lahar-controller: "
                "namespace lahar-system does not exist"
            )
            assert "kubectl create namespace lahar-system" in why
            assert await _leader(client) == f"{LEADER} 0.0"

    asyncio.run(main())


def test_a_standby_that_has_not_read_its_lease_lately_is_not_ready(
    unreachable: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No attempt has reached the API server yet, or none for longer than the lease duration:
    a leader that went meanwhile would not be followed by this replica."""
    monkeypatch.setattr(lease, "Elector", _elector())  # (every attempt unanswered)

    async def main() -> None:
        app = make_app(unreachable, ControllerOptions(workers=1, lease=LEASE))
        shell = app[SHELL]
        async with TestClient(TestServer(app)) as client:
            shell.synced.set()
            assert await _readyz(client) == (
                503,
                "not leading: this controller has not read Lease lahar-system/lahar-controller yet",
            )
            shell.lease_read = time.monotonic() - 2 * LEASE.lease_seconds
            assert await _readyz(client) == (
                503,
                "not leading: this controller has not read Lease lahar-system/lahar-controller "
                "for 30 s: the API server is unreachable or failing",
            )
            shell.lease_read = time.monotonic()
            assert await _readyz(client) == (200, "ok")

    asyncio.run(main())
