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

from extender.actions.barrier import Barrier, BarrierObserver
from extender.actions.bind import Binder, BindError
from extender.api.candidates import CandidateParser
from extender.cache.informer import Informers
from extender.cache.state import ClusterState
from extender.framework.gang import Gangs
from extender.framework.policy import Policy
from extender.framework.session import Engine
from extender.kube import KubeError, annotate_pod, bind_pod
from extender.server.keys import (
    BARRIER,
    BINDER,
    ENGINE,
    INFORMERS,
    METRICS,
    PARSER,
    STATE,
    WAKER,
)
from extender.server.metrics import Metrics
from extender.server.routes import add_routes
from extender.server.waker import Patcher, Waker

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


def api_patcher(api: k8s.ApiClient) -> Patcher:
    async def patch(namespace: str, name: str, annotations: dict[str, str]) -> None:
        await asyncio.to_thread(annotate_pod, api, namespace, name, annotations)

    return patch


def make_app(
    policy: Policy,
    *,
    api: k8s.ApiClient | None = None,
    state: ClusterState | None = None,
    binder: Binder | None = None,
    patcher: Patcher | None = None,
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
    app[BARRIER], app[WAKER] = None, None
    gangs = app[ENGINE].gangs
    if gangs is not None:
        metrics = app[METRICS]
        observer = BarrierObserver(
            waited=metrics.barrier_wait.observe,
            timed_out=lambda key: metrics.barrier_timeouts.inc(),
            partial=lambda key: metrics.partial_gangs.inc(),
        )
        app[BARRIER] = Barrier(app[STATE], gangs, binder, observer)
        gangs.on_admitted.append(lambda key: metrics.gangs_admitted.inc())
        gangs.on_rejected.append(lambda key, why: metrics.gang_rejections.labels(why.cause).inc())
        metrics.pending_gangs.set_function(lambda: len(gangs.parked))
        if patcher is None and api is not None:
            patcher = api_patcher(api)
        if patcher is not None:
            app[WAKER] = waker = Waker(app[STATE], gangs, patcher)
            waker.on_woken = metrics.wakes.inc
            app.cleanup_ctx.append(_waker)
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
        expiry = asyncio.create_task(_expire(app[STATE], app[ENGINE].gangs))
        yield
        expiry.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await expiry
        await asyncio.to_thread(informers.stop)

    return context


async def _waker(app: web.Application) -> AsyncIterator[None]:
    waker = app[WAKER]
    assert waker is not None
    waker.attach()
    task = asyncio.create_task(waker.run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _expire(state: ClusterState, gangs: Gangs | None) -> None:
    """Drop assumptions the watch never confirmed and reservations that made no progress."""
    while True:
        await asyncio.sleep(EXPIRY_INTERVAL)
        for key in gangs.expire() if gangs is not None else ():
            log.warning(
                "gang %s held its reservation without progress; released it and backing off", key
            )
        for uid in state.expire_assumed():
            pod = state.pods.get(uid)
            log.warning(
                "assumed binding of pod %s was never seen by the watch; no longer counted",
                pod.key if pod else uid,
            )
