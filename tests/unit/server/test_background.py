"""The extender's background tasks (expiry, writers, preemptor, election, TLS reload): one that
fails stops the process with a critical log line, as losing the Lease does; one that ends or is
cancelled at shutdown does not."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web

from extender.server.app import _task
from extender.server.keys import FAILED_TASKS


async def _serve_for(app: web.Application, seconds: float) -> None:
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await asyncio.sleep(seconds)
    finally:
        await runner.cleanup()


def test_a_background_task_that_fails_stops_the_process(caplog: pytest.LogCaptureFixture) -> None:
    async def expiry(app: web.Application) -> None:
        await asyncio.sleep(0.01)
        raise RuntimeError("ledger lost")

    app = web.Application()
    app[FAILED_TASKS] = []
    app.cleanup_ctx.append(_task(expiry, "expiry"))
    with (
        caplog.at_level(logging.CRITICAL, logger="extender.server.app"),
        pytest.raises(web.GracefulExit),
    ):
        asyncio.run(_serve_for(app, 30))
    assert "background task expiry failed" in caplog.text
    assert "ledger lost" in caplog.text
    assert app[FAILED_TASKS] == ["expiry"]  # `lahar serve` exits 1 naming it


def test_tasks_that_end_or_run_until_shutdown_stop_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    async def once(app: web.Application) -> None:
        ran.append("once")

    async def forever(app: web.Application) -> None:
        ran.append("forever")
        await asyncio.Event().wait()

    app = web.Application()
    app[FAILED_TASKS] = []
    app.cleanup_ctx.append(_task(once, "once"))
    app.cleanup_ctx.append(_task(forever, "forever"))
    with caplog.at_level(logging.CRITICAL, logger="extender.server.app"):
        asyncio.run(_serve_for(app, 0.05))
    assert sorted(ran) == ["forever", "once"]
    assert "failed" not in caplog.text
    assert app[FAILED_TASKS] == []
