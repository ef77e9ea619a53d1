"""The probes and the metrics route, on a real aiohttp test server: /healthz answers while the
process runs, /readyz says why it is not ready (503) until the component's rule holds, /metrics
exports the app's registry; a probe listener answers the same three and nothing else."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Counter

from extender.devcluster.ports import free_ports
from extender.shell import SHELL, install, probe_listener


def _app(ready: list[bool]) -> tuple[web.Application, Counter]:
    registry = CollectorRegistry()
    calls = Counter("lahar_test_calls", "Calls", registry=registry)
    app = web.Application()
    install(app, registry, lambda: None if ready else "cache not synced")
    return app, calls


def test_probes_answer_by_the_components_rule() -> None:
    ready: list[bool] = []

    async def main() -> None:
        app, calls = _app(ready)
        calls.inc(3)
        async with TestClient(TestServer(app)) as client:
            health = await client.get("/healthz")
            assert (health.status, await health.text()) == (200, "ok")
            unready = await client.get("/readyz")
            assert (unready.status, await unready.text()) == (503, "cache not synced")
            ready.append(True)
            now = await client.get("/readyz")
            assert (now.status, await now.text()) == (200, "ok")
            metrics = await client.get("/metrics")
            assert metrics.headers["Content-Type"].startswith("text/plain")
            assert "lahar_test_calls_total 3.0" in await metrics.text()

    asyncio.run(main())


def test_the_shell_record_starts_unsynced_leaderless_and_unfailed() -> None:
    app, _ = _app([])
    shell = app[SHELL]
    assert not shell.synced.is_set() and not shell.leading.is_set()
    assert shell.failed == [] and not shell.lease_lost
    assert shell.lease_problem is None and shell.lease_read is None


def test_a_probe_listener_answers_the_probes_of_the_app_and_nothing_else() -> None:
    (port,) = free_ports(1)

    async def verb(request: web.Request) -> web.Response:
        return web.Response(text="verb")

    async def main() -> None:
        app, _ = _app([True])
        app.router.add_post("/filter", verb)
        app.cleanup_ctx.append(probe_listener("127.0.0.1", port))
        async with TestClient(TestServer(app)), aiohttp.ClientSession() as session:
            base = f"http://127.0.0.1:{port}"
            async with session.get(f"{base}/readyz") as ready:
                assert (ready.status, await ready.text()) == (200, "ok")
            async with session.get(f"{base}/metrics") as metrics:
                assert "lahar_test_calls_total 0.0" in await metrics.text()
            async with session.post(f"{base}/filter") as other:
                assert other.status == 404

    asyncio.run(main())
