"""The extender app: what it holds, and the background work that lives as long as it does.

`make_app` wires a state, an engine (policy + tables), a binder and metrics into an aiohttp app.
With an API client, a `cleanup_ctx` starts the informers when the app starts and stops them when it
stops, and a periodic task expires assumed pods the watch never confirmed; without one (tests,
benchmarks) the state is whatever the caller filled in and the app is ready at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from aiohttp import web
from kubernetes import client as k8s

from extender.actions.bind import Binder, BindError
from extender.api.candidates import CandidateParser
from extender.cache.informer import Informers
from extender.cache.state import ClusterState
from extender.framework.policy import Policy
from extender.framework.session import Engine
from extender.kube import KubeError, bind_pod
from extender.server.keys import BINDER, ENGINE, INFORMERS, METRICS, PARSER, STATE
from extender.server.metrics import Metrics
from extender.server.routes import add_routes

log = logging.getLogger(__name__)
EXPIRY_INTERVAL = 5.0


def api_binder(api: k8s.ApiClient) -> Binder:
    """Bindings through the API server, in a worker thread (the client blocks)."""

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        try:
            await asyncio.to_thread(bind_pod, api, namespace, name, uid, node)
        except KubeError as error:
            raise BindError(str(error)) from error

    return binder


def make_app(
    policy: Policy,
    *,
    api: k8s.ApiClient | None = None,
    state: ClusterState | None = None,
    binder: Binder | None = None,
) -> web.Application:
    app = web.Application()
    app[STATE] = state if state is not None else ClusterState()
    app[ENGINE] = Engine(policy)
    app[PARSER] = CandidateParser()
    app[INFORMERS] = None
    app[METRICS] = Metrics(app[STATE].sizes, lambda: _informer_counts(app))
    if binder is None:
        if api is None:
            raise ValueError("make_app needs an API client or a binder")
        binder = api_binder(api)
    app[BINDER] = binder
    if api is not None:
        app.cleanup_ctx.append(_informers(api))
    add_routes(app)
    return app


def _informer_counts(app: web.Application) -> list[tuple[str, int, int]]:
    informers = app[INFORMERS]
    if informers is None:
        return []
    return [(i.kind.name, i.relists, i.reconnects) for i in informers.items]


def _informers(api: k8s.ApiClient) -> Callable[[web.Application], AsyncIterator[None]]:
    async def context(app: web.Application) -> AsyncIterator[None]:
        informers = Informers(api, app[STATE], asyncio.get_running_loop())
        app[INFORMERS] = informers
        informers.start()
        expiry = asyncio.create_task(_expire_assumed(app[STATE]))
        yield
        expiry.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await expiry
        await asyncio.to_thread(informers.stop)

    return context


async def _expire_assumed(state: ClusterState) -> None:
    while True:
        await asyncio.sleep(EXPIRY_INTERVAL)
        for uid in state.expire_assumed():
            pod = state.pods.get(uid)
            log.warning(
                "assumed binding of pod %s was never seen by the watch; no longer counted",
                pod.key if pod else uid,
            )
