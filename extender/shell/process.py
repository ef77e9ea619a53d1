"""The shell put into an app, and the app run as the process.

`install` gives the app its shell record (`SHELL`) and its probe and metrics routes; `run` serves
the app with aiohttp's `run_app` until a signal, a failed guarded task or a lost Lease ends it, and
turns how it ended into the exit status: 1, logged, when a background task failed or the Lease was
lost (the Deployment then starts a fresh process), else 0.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry

from extender.shell.keys import SHELL, Shell
from extender.shell.probes import add_probe_routes

log = logging.getLogger(__name__)


def install(
    app: web.Application, registry: CollectorRegistry, unready: Callable[[], str | None]
) -> Shell:
    """The shell of `app`: /metrics exports `registry`, /readyz answers 503 with `unready()`
    while that says why."""
    shell = app[SHELL] = Shell(registry, unready)
    add_probe_routes(app, app)

    async def stopping(app: web.Application) -> None:
        shell.stopping = True  # (from here a failure or a lost Lease lets the shutdown finish)

    app.on_shutdown.insert(0, stopping)
    return shell


def run(
    app: web.Application, *, host: str, port: int, ssl_context: ssl.SSLContext | None = None
) -> int:
    """Serve `app` at `host:port` until the process is to end; the exit status."""
    web.run_app(app, host=host, port=port, ssl_context=ssl_context, print=None, access_log=None)
    shell = app[SHELL]
    if shell.failed:
        log.error("stopped because background task %s failed", ", ".join(shell.failed))
        return 1
    if shell.lease_lost:
        log.error("stopped after losing the Lease; restart to stand by again")
        return 1
    return 0
