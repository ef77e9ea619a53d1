"""Guarded background tasks and the informers' lifecycle. A task that fails ends the process with
a critical log line naming it and its exception (GracefulExit out of the loop, as losing the Lease
does); one that returns or runs until cleanup ends nothing. Informers start with the app, mark it
synced when every kind has listed, and end with it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

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
    with caplog.at_level(logging.WARNING, logger="extender.shell.background"):
        asyncio.run(_serve_for(app, 0.05))
    assert sorted(ran) == ["forever", "once"]
    assert "failed" not in caplog.text
    assert "background task once ended" in caplog.text  # it no longer runs: said, not fatal
    assert "forever" not in caplog.text
    assert app[SHELL].failed == []


def test_a_task_made_to_return_ends_without_a_word(caplog: pytest.LogCaptureFixture) -> None:
    async def once(app: web.Application) -> None:
        pass

    app = _app()
    app.cleanup_ctx.append(guarded(once, "once", returns=True))
    with caplog.at_level(logging.WARNING, logger="extender.shell.background"):
        asyncio.run(_serve_for(app, 0.05))
    assert "once" not in caplog.text


def test_a_task_that_fails_during_shutdown_lets_the_cleanup_finish(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failure once the app is shutting down is said and recorded; the cleanup contexts after
    it still run (a second GracefulExit in the middle of the shutdown would skip them)."""
    cleaned: list[str] = []

    async def writer(app: web.Application) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            raise RuntimeError("could not flush")  # (cancelled at cleanup, it fails instead)

    async def last(app: web.Application) -> AsyncIterator[None]:
        yield
        cleaned.append("last")

    async def fail_on_shutdown(app: web.Application) -> None:
        task = next(t for t in asyncio.all_tasks() if t.get_name() == "writer")
        task.cancel()
        await asyncio.sleep(0.01)

    app = _app()
    app.cleanup_ctx.append(last)
    app.cleanup_ctx.append(guarded(writer, "writer"))
    app.on_shutdown.append(fail_on_shutdown)
    with caplog.at_level(logging.CRITICAL, logger="extender.shell.background"):
        asyncio.run(_serve_for(app, 0.05))  # no GracefulExit out of the shutdown
    assert "background task writer failed" in caplog.text
    assert app[SHELL].failed == ["writer"]
    assert cleaned == ["last"]


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
