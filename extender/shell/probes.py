"""The probes and the metrics route every Lahar process answers.

- `/healthz`: "ok" while the process runs (an event loop that answers is a live process);
- `/readyz`: "ok", or HTTP 503 with the reason, by the component's own rule (`Shell.unready`: the
  extender serves (or follows its scheduler's Lease with a whole cache); the controller could
  serve if it led: a whole cache and, standing by, a Lease it can take; the webhook's cache is
  whole and its caBundle published);
- `/metrics`: the app's registry in Prometheus' text format.

`probe_listener` answers the same three (and nothing else) on a second address: the extender's
verbs listen on loopback only, while the kubelet and Prometheus call from outside the pod.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from extender.shell.keys import SHELL, Lifecycle

log = logging.getLogger(__name__)


def add_probe_routes(target: web.Application, app: web.Application) -> None:
    """/healthz, /readyz and /metrics of `app` (which holds the shell), served by `target`: the
    app itself, or a listener of its own."""

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        why = app[SHELL].unready()
        if why is None:
            return web.Response(text="ok")
        return web.Response(status=503, text=why)

    async def metrics(request: web.Request) -> web.Response:
        body = generate_latest(app[SHELL].registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    target.router.add_get("/healthz", healthz)
    target.router.add_get("/readyz", readyz)
    target.router.add_get("/metrics", metrics)


def probe_listener(host: str, port: int) -> Lifecycle:
    """A second HTTP listener at `host:port` with the probes and metrics only, open while the
    app runs."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        probes = web.Application()
        add_probe_routes(probes, app)
        runner = web.AppRunner(probes, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        log.info("serving probes and metrics over HTTP on %s:%d", host, port)
        yield
        await runner.cleanup()

    return context
