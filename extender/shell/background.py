"""Work that lives as long as the app: guarded tasks, and the informers that fill its cache.

`guarded(work, name)` runs `work(app)` as a task from the app's start to its cleanup. A task that
fails ends the process: a CRITICAL log line names the task and carries its exception, the name
goes into `Shell.failed`, and GracefulExit is raised on the event loop (as losing the Lease does),
so `run_app` returns and the command exits 1. A process whose writer, expiry, workers or
certificate rotation died would go on answering from state nobody keeps, with a healthy probe;
the Deployment starts a fresh one, which rebuilds its state from the API server. A task that is
cancelled at cleanup ends nothing; one that returns ends nothing either, but says so in a WARNING
unless it was made to return (`returns=True`). Once the app is shutting down (`Shell.stopping`),
a failure is logged and recorded and the shutdown goes on: raising GracefulExit again in the middle
of it would skip the cleanup still to come.

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
from extender.shell.keys import SHELL, Lifecycle, Shell

log = logging.getLogger(__name__)


def end_process(shell: Shell) -> None:
    """End the process (GracefulExit out of the event loop), unless it is ending already."""
    if not shell.stopping:
        raise web.GracefulExit()


def guarded(
    work: Callable[[web.Application], Coroutine[Any, Any, None]],
    name: str,
    *,
    returns: bool = False,
) -> Lifecycle:
    """`work(app)` as a task for as long as the app runs; its failure ends the process.
    `returns`: the task may end before the app does (else a WARNING says it did)."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        def end_on_failure(task: asyncio.Task[None]) -> None:
            if task.cancelled():
                return
            error = task.exception()
            if error is None:
                if not returns:
                    log.warning("background task %s ended; it no longer runs", name)
                return
            if not isinstance(error, Exception):
                return  # a SystemExit on its way out of the loop already
            log.critical(
                "background task %s failed; stopping the process so a fresh replica takes over",
                name,
                exc_info=error,
            )
            app[SHELL].failed.append(name)
            end_process(app[SHELL])  # out of the event loop, as a lost Lease does

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


def nothing(app: web.Application) -> None:
    """A hook that does nothing."""


def informers(
    build: Callable[[web.Application], Informers[Any]],
    synced: Callable[[web.Application], None] = nothing,
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
