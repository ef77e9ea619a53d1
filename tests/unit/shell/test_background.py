"""Guarded background tasks and the informers' lifecycle. A task that fails ends the process with
a critical log line naming it and its exception (GracefulExit out of the loop, as losing the Lease
does); one that returns or runs until cleanup ends nothing. Informers start with the app, mark it
synced when every kind has listed, and end with it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender.shell import SHELL, guarded, informers, install


def _app() -> web.Application:
    app = web.Application()
    install(app, CollectorRegistry(), lambda: None)
    return app


async def _serve_for(app: web.Application, seconds: float) -> None:
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await asyncio.sleep(seconds)
    finally:
        await runner.cleanup()


def test_a_background_task_that_fails_ends_the_process(caplog: pytest.LogCaptureFixture) -> None:
    async def expiry(app: web.Application) -> None:
        await asyncio.sleep(0.01)
        raise RuntimeError("ledger lost")

    app = _app()
    app.cleanup_ctx.append(guarded(expiry, "expiry"))
    with (
        caplog.at_level(logging.CRITICAL, logger="extender.shell.background"),
        pytest.raises(web.GracefulExit),
    ):
        asyncio.run(_serve_for(app, 30))
    assert "background task expiry failed" in caplog.text
    assert "ledger lost" in caplog.text
    assert app[SHELL].failed == ["expiry"]  # the command exits 1 naming it


def test_tasks_that_end_or_run_until_cleanup_end_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    async def once(app: web.Application) -> None:
        ran.append("once")

    async def forever(app: web.Application) -> None:
        ran.append("forever")
        await asyncio.Event().wait()

    app = _app()
    app.cleanup_ctx.append(guarded(once, "once"))
    app.cleanup_ctx.append(guarded(forever, "forever"))
    with caplog.at_level(logging.CRITICAL, logger="extender.shell.background"):
        asyncio.run(_serve_for(app, 0.05))
    assert sorted(ran) == ["forever", "once"]
    assert "failed" not in caplog.text
    assert app[SHELL].failed == []


class _Informers:
    """Informers without an API server: 'lists' every kind once started."""

    def __init__(self) -> None:
        self.on_synced: list[Callable[[], None]] = []
        self.events: list[str] = []

    def start(self) -> None:
        self.events.append("started")
        loop = asyncio.get_running_loop()
        for callback in self.on_synced:
            loop.call_soon(callback)

    def stop(self) -> None:
        self.events.append("ended")


def test_informers_start_with_the_app_mark_it_synced_and_end_with_it() -> None:
    built = _Informers()
    seen: list[bool] = []

    def synced(app: web.Application) -> None:
        seen.append(app[SHELL].synced.is_set())

    app = _app()
    app.cleanup_ctx.append(informers(lambda app: built, synced))  # type: ignore[arg-type,return-value]
    asyncio.run(_serve_for(app, 0.05))
    assert built.events == ["started", "ended"]
    assert seen == [True]  # synced is set before the component's callback runs
