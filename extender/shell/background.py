"""Work that lives as long as the app: guarded tasks, and the informers that fill its cache.

`guarded(work, name)` runs `work(app)` as a task from the app's start to its cleanup. A task that
fails ends the process: a CRITICAL log line names the task and carries its exception, the name
goes into `Shell.failed`, and GracefulExit is raised on the event loop (as losing the Lease does),
so `run_app` returns and the command exits 1. A process whose writer, expiry, workers or
certificate rotation died would go on answering from state nobody keeps, with a healthy probe;
the Deployment starts a fresh one, which rebuilds its state from the API server. A task that
returns, or is cancelled at cleanup, ends nothing.

`informers(build, synced)` starts the informers `build(app)` makes when the app starts, from the
start on a standby too (its cache is warm when it comes to lead), and ends their threads at
cleanup. Once every kind has been listed, `Shell.synced` is set and `synced(app)` runs on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from aiohttp import web

from extender.cache.informer import Informers
from extender.shell.keys import SHELL, Lifecycle

log = logging.getLogger(__name__)


def guarded(work: Callable[[web.Application], Coroutine[Any, Any, None]], name: str) -> Lifecycle:
    """`work(app)` as a task for as long as the app runs; its failure ends the process."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        def end_on_failure(task: asyncio.Task[None]) -> None:
            if task.cancelled() or not isinstance(task.exception(), Exception):
                return  # done, or a SystemExit on its way out of the loop already
            log.critical(
                "background task %s failed; stopping the process so a fresh replica takes over",
                name,
                exc_info=task.exception(),
            )
            app[SHELL].failed.append(name)
            raise web.GracefulExit()  # out of the event loop, as a lost Lease does

        task = asyncio.create_task(work(app), name=name)
        task.add_done_callback(end_on_failure)
        yield
        task.remove_done_callback(end_on_failure)
        if task.done():
            return  # ended, or failed (and said so)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return context


def _nothing(app: web.Application) -> None:
    pass


def informers(
    build: Callable[[web.Application], Informers[Any]],
    synced: Callable[[web.Application], None] = _nothing,
) -> Lifecycle:
    """Informers from `build(app)` (called on the loop), started with the app and ended at its
    cleanup; `synced(app)` once every kind has been listed."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        shell = app[SHELL]
        running = build(app)

        def whole() -> None:
            shell.synced.set()
            synced(app)

        running.on_synced.append(whole)
        running.start()
        yield
        await asyncio.to_thread(running.stop)

    return context
