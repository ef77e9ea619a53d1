"""The controller's probes, on a real aiohttp test server: with an API server it cannot reach, its
cache never syncs, so it is alive but not ready, saying why; /metrics has its registry."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from aiohttp.test_utils import TestClient, TestServer
from kubernetes import client as k8s

from extender.controller.app import ControllerOptions, make_app
from extender.devcluster.ports import free_ports


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
            assert await ready.text() == "not leading or cache not synced"
            metrics = await (await client.get("/metrics")).text()
            assert "lahar_controller_jobs 0.0" in metrics

    asyncio.run(main())
