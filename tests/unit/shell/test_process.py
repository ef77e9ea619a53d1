"""`run` serves the app as the process and says how it ended: a background task that failed ends
it with exit status 1 and a line naming the task; a lost Lease ends it with 1; an ordinary end
(a signal) with 0."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender.devcluster.ports import free_ports
from extender.shell import SHELL, guarded, install, run


def _run(app: web.Application) -> int:
    (port,) = free_ports(1)
    return run(app, host="127.0.0.1", port=port)


def _app() -> web.Application:
    app = web.Application()
    install(app, CollectorRegistry(), lambda: None)
    return app


def test_a_failed_background_task_ends_the_process_with_status_1(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def writer(app: web.Application) -> None:
        await asyncio.sleep(0.01)
        raise KeyError("gang")

    app = _app()
    app.cleanup_ctx.append(guarded(writer, "StatusWriter"))
    with caplog.at_level(logging.ERROR, logger="extender.shell"):
        assert _run(app) == 1
    assert "background task StatusWriter failed" in caplog.text
    assert "stopped because background task StatusWriter failed" in caplog.text


def test_a_lost_lease_ends_the_process_with_status_1(caplog: pytest.LogCaptureFixture) -> None:
    async def lose(app: web.Application) -> None:
        await asyncio.sleep(0.01)
        app[SHELL].lease_lost = True
        raise web.GracefulExit()

    app = _app()
    app.cleanup_ctx.append(guarded(lose, "leader election"))
    with caplog.at_level(logging.ERROR, logger="extender.shell"):
        assert _run(app) == 1
    assert "stopped after losing the Lease" in caplog.text
    assert app[SHELL].failed == []


def test_an_ordinary_end_is_status_0() -> None:
    async def interrupt(app: web.Application) -> None:
        await asyncio.sleep(0.01)
        raise web.GracefulExit()  # what SIGTERM raises in run_app

    app = _app()
    app.cleanup_ctx.append(guarded(interrupt, "interrupt"))
    assert _run(app) == 0
