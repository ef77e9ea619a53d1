"""The extender app: what it holds, and the background work that lives as long as it does.

`make_app` wires a state, an engine (policy + tables), a binder and metrics into an aiohttp app.
With an API client, a `cleanup_ctx` starts the informers when the app starts and stops them when it
stops, and a periodic task expires assumed pods the watch never confirmed; without one (tests,
benchmarks) the state is whatever the caller filled in and the app is ready at once.

Until every informer has listed once (`SYNCED`) and, with leader election, this replica holds the
Lease (`LEADING`), filter and bind calls wait and then refuse (`SERVING`): a decision on half a
cluster could bind a gang member whose PodGroup is not known yet, and two replicas deciding at once
could split a gang. Standbys keep their cache warm but answer nothing and write nothing (readiness
says so, so a Service sends the scheduler to the leader only). When a replica starts to serve,
gangs found partly bound are admitted before anything else (`gangs.recovery`) and reported,
and every PodGroup's status is brought up to date; its writers (status, queues, waker, preemptor)
start only then. Losing the Lease stops the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Collection, Coroutine
from typing import Any, Protocol

from aiohttp import web
from kubernetes import client as k8s

from extender.actions.barrier import Barrier, BarrierObserver
from extender.actions.bind import Binder
from extender.api.candidates import CandidateParser
from extender.cache.informer import Informers
from extender.cache.state import ClusterState
from extender.framework.policy import Policy
from extender.framework.session import Engine
from extender.gangs.fairness import dominant_share
from extender.gangs.group_status import Event
from extender.gangs.ledger import Gangs
from extender.gangs.members import view_gang
from extender.gangs.recovery import recover
from extender.kube import AsyncApi
from extender.kube.leader import Elector, FollowOptions, LeaseFollower, LeaseOptions
from extender.server.adapters import (
    api_binder,
    api_event_sink,
    api_evictor,
    api_lifter,
    api_patcher,
    api_queue_create,
    api_queue_patch,
    api_status_patch,
)
from extender.server.keys import (
    BARRIER,
    BINDER,
    ENGINE,
    FAILED_TASKS,
    FOLLOWING,
    INFORMERS,
    LEADING,
    LEASE_LOST,
    METRICS,
    PARSER,
    PREEMPTOR,
    SERVING,
    STATE,
    STATUS,
    SYNCED,
    TLS,
)
from extender.server.metrics import ExtenderMetrics, QueueFigures, QueueGauges
from extender.server.preemptor import Preemptor
from extender.server.queue_writer import QueueWriter
from extender.server.routes import add_probe_routes, add_routes
from extender.server.status_writer import StatusWriter
from extender.server.tls import ServerTls
from extender.server.waker import Waker

log = logging.getLogger(__name__)
EXPIRY_INTERVAL = 5.0


def make_app(
    policy: Policy,
    *,
    api: k8s.ApiClient | None = None,
    state: ClusterState | None = None,
    binder: Binder | None = None,
    tls: ServerTls | None = None,
    lease: LeaseOptions | None = None,
    follow: FollowOptions | None = None,
    schedulers: Collection[str] = (),
    probes: tuple[str, int] | None = None,
) -> web.Application:
    """The extender's app. With `lease` (and an API client) it serves only while it holds that
    Lease; with `follow`, while the kube-scheduler beside it holds the scheduler's Lease; with
    neither, it leads at once (a single replica, tests, benchmarks). `schedulers`: the
    schedulerNames it serves (`Engine`). `probes`: also answer /healthz, /readyz and /metrics
    (and nothing else) at this host and port, for a kubelet and Prometheus when the verbs listen
    on loopback only."""
    app = web.Application()
    app[TLS] = tls
    app[FAILED_TASKS] = []
    _leadership(app, api, lease, follow)
    if tls is not None:
        app.cleanup_ctx.append(_reloading(tls))
    if probes is not None:
        app.cleanup_ctx.append(_probe_site(*probes))
    app[STATE] = state if state is not None else ClusterState()
    app[ENGINE] = Engine(policy, schedulers)
    app[PARSER] = CandidateParser(known=app[STATE].known_pod)
    app[INFORMERS] = None
    app[SYNCED] = asyncio.Event()
    if api is None:  # no cache to fill: serve as soon as this replica leads
        app[SYNCED].set()
        if app[LEADING].is_set():
            app[SERVING].set()
    app[METRICS] = ExtenderMetrics(app[STATE].sizes, lambda: _informer_counts(app))
    if tls is not None:
        app[METRICS].certificate_expiry.set_function(lambda: tls.expires)
    writes = AsyncApi(api.configuration) if api is not None else None
    if writes is not None:
        app.on_cleanup.append(lambda app: writes.close())
    if binder is None:
        if writes is None:
            raise ValueError("make_app needs an API client or a binder")
        binder = api_binder(writes)
    app[BINDER] = binder
    app[BARRIER], app[STATUS], app[PREEMPTOR] = None, None, None
    gangs = app[ENGINE].gangs
    if gangs is not None:
        _gang_rules(app, gangs, binder)
        if api is not None and writes is not None:
            _writers(app, api, writes, gangs)
    if api is not None:
        app.cleanup_ctx.append(_informers(api))
        app.cleanup_ctx.append(_task(lambda app: _expire(app[STATE], app[ENGINE].gangs), "expiry"))
    add_routes(app)
    return app


def _leadership(
    app: web.Application,
    api: k8s.ApiClient | None,
    lease: LeaseOptions | None,
    follow: FollowOptions | None,
) -> None:
    """When this replica leads: holding `lease`, while its scheduler holds `follow`'s, or at
    once with neither."""
    if lease is not None and follow is not None:
        raise ValueError("an extender either holds its own Lease or follows its scheduler's")
    app[LEADING], app[SERVING], app[LEASE_LOST] = asyncio.Event(), asyncio.Event(), asyncio.Event()
    app[FOLLOWING] = follow is not None
    if lease is None and follow is None:
        app[LEADING].set()
    elif api is not None and lease is not None:
        app.cleanup_ctx.append(_election(api, lease))
    elif api is not None and follow is not None:
        app.cleanup_ctx.append(_following(api, follow))


def _gang_rules(app: web.Application, gangs: Gangs, binder: Binder) -> None:
    """The bind barrier, and the gang rules' metrics."""
    metrics = app[METRICS]
    observer = BarrierObserver(
        waited=metrics.barrier_wait.observe,
        timed_out=lambda key: metrics.barrier_timeouts.inc(),
        waited_on=lambda key: metrics.barrier_retries.inc(),
        partial=lambda key: metrics.partial_gangs.inc(),
    )
    app[BARRIER] = barrier = Barrier(app[STATE], gangs, binder, observer)
    metrics.members_held.set_function(barrier.holding)
    gangs.on_admitted.append(lambda key: metrics.gangs_admitted.inc())
    gangs.on_rejected.append(lambda key, why: metrics.gang_rejections.labels(why.cause).inc())
    metrics.pending_gangs.set_function(lambda: len(gangs.waiting))
    metrics.pods_in_flight.set_function(gangs.in_flight)
    metrics.registry.register(QueueGauges(lambda: _queue_figures(app[STATE], gangs)))


def _writers(app: web.Application, api: k8s.ApiClient, writes: AsyncApi, gangs: Gangs) -> None:
    """What the leader writes back: lifted gates and woken pods, PodGroup and Queue status,
    preemptions."""
    metrics = app[METRICS]
    waker = Waker(app[STATE], gangs, api_patcher(writes), api_lifter(writes))
    waker.on_woken = metrics.wakes.inc
    waker.on_lifted = metrics.gates_lifted.inc
    app.cleanup_ctx.append(_background(waker))
    app[STATUS] = writer = StatusWriter(
        app[STATE], gangs, api_status_patch(api), api_event_sink(api), ready=app[SERVING]
    )
    app.cleanup_ctx.append(_background(writer))
    queues = QueueWriter(
        app[STATE], gangs, api_queue_patch(api), api_queue_create(api), ready=app[SERVING]
    )
    app.cleanup_ctx.append(_background(queues))
    preemption = app[ENGINE].preemption
    if preemption is not None:
        interval, rules = preemption
        app[PREEMPTOR] = preemptor = Preemptor(
            app[STATE],
            gangs,
            api_evictor(api),
            writer.announce,
            interval=interval,
            rules=rules,
            ready=app[SERVING],
        )
        preemptor.on_evicted = metrics.preemption_victims.inc
        app.cleanup_ctx.append(_background(preemptor))


def _reloading(tls: ServerTls) -> Callable[[web.Application], AsyncIterator[None]]:
    """Check the certificate files every `interval`: cert-manager rewrites them in place."""

    async def loop(app: web.Application) -> None:
        while True:
            await asyncio.sleep(tls.files.interval)
            try:
                tls.reload()
            except (OSError, ValueError):  # ssl.SSLError is an OSError
                log.exception("reloading the TLS files failed; serving the loaded ones")

    return _task(loop, "TLS reload")


def _queue_figures(state: ClusterState, gangs: Gangs) -> QueueFigures:
    views = gangs.queues(state)
    total = state.capacity()
    waiting: Counter[str] = Counter()
    shares = {}
    for key in {*state.pod_groups, *gangs.waiting}:
        gang = view_gang(state, key)
        if key in gangs.waiting:
            waiting[gang.queue] += 1
        if gang.group is not None and (gang.placed or gang.pending):  # finished: no series
            meta = gang.group.metadata
            shares[(meta.namespace, meta.name, gang.queue)] = dominant_share(gang.allocated, total)
    return QueueFigures(views, waiting, shares)


def _informer_counts(app: web.Application) -> list[tuple[str, int, int]]:
    informers = app[INFORMERS]
    if informers is None:
        return []
    return [(i.kind.name, i.relists, i.reconnects) for i in informers.items]


def _informers(api: k8s.ApiClient) -> Callable[[web.Application], AsyncIterator[None]]:
    async def context(app: web.Application) -> AsyncIterator[None]:
        informers = Informers(api, app[STATE], asyncio.get_running_loop())
        app[INFORMERS] = informers
        informers.on_synced.append(lambda: _synced(app))
        informers.start()
        yield
        await asyncio.to_thread(informers.stop)

    return context


def _synced(app: web.Application) -> None:
    app[SYNCED].set()
    _serve(app)


def _serve(app: web.Application) -> None:
    """Once this replica leads and its cache is whole: complete partly bound gangs first,
    refresh statuses, then serve (even if the first two fail: a bug there must not refuse every
    call forever)."""
    if app[SERVING].is_set() or not (app[SYNCED].is_set() and app[LEADING].is_set()):
        return
    try:
        _recover(app)
    except Exception:
        log.exception("recovering gangs after the cache sync failed; serving anyway")
    finally:
        app[SERVING].set()


def _election(
    api: k8s.ApiClient, lease: LeaseOptions
) -> Callable[[web.Application], AsyncIterator[None]]:
    """Hold the Lease; serve once it is held. Losing it stops the process (GracefulExit), so two
    replicas never bind or write at once; the Deployment starts it again as a standby."""

    async def lead(app: web.Application) -> None:
        def lost() -> None:
            app[LEADING].clear()
            app[SERVING].clear()
            app[LEASE_LOST].set()
            raise web.GracefulExit()

        Elector(api, lease, app[LEADING], lost).start()
        log.info("standing by for the Lease %s/%s", lease.namespace, lease.name)
        await app[LEADING].wait()
        log.info("leading: this replica holds the Lease %s/%s", lease.namespace, lease.name)
        _serve(app)

    return _task(lead, "leader election")


def _following(
    api: k8s.ApiClient, follow: FollowOptions
) -> Callable[[web.Application], AsyncIterator[None]]:
    """Serve while the kube-scheduler beside this process holds the scheduler's Lease (its
    holder identity begins with this pod's hostname): only that scheduler calls, and this is
    the extender whose ledger it is calling. When another scheduler takes the Lease after this
    one led, the process stops (as a lost Lease stops it): its ledger is no longer the one being
    called, and the pod's restart brings it back as a standby with a fresh one."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        def seen(holder: str) -> None:
            if follow.ours(holder):
                if not app[LEADING].is_set():
                    log.info("leading: the scheduler beside this extender holds the Lease")
                    app[LEADING].set()
                    _serve(app)
            elif app[LEADING].is_set():
                app[LEADING].clear()
                app[SERVING].clear()
                if not holder:  # released: the scheduler beside it stopped (a rollout, a drain)
                    log.info(
                        "the scheduler beside this extender released the Lease %s/%s: stopping",
                        follow.namespace,
                        follow.name,
                    )
                else:
                    log.error(
                        "the scheduler Lease %s/%s went to %s: stopping",
                        follow.namespace,
                        follow.name,
                        holder,
                    )
                    app[LEASE_LOST].set()
                raise web.GracefulExit()

        follower = LeaseFollower(api, follow, seen)
        follower.start()
        yield
        follower.stop()

    return context


def _probe_site(host: str, port: int) -> Callable[[web.Application], AsyncIterator[None]]:
    """A second listener with the probes and metrics only (`add_probe_routes`)."""

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


def _recover(app: web.Application) -> None:
    state, gangs, writer = app[STATE], app[ENGINE].gangs, app[STATUS]
    sizes = state.sizes()
    log.info(
        "cache synced: %d nodes, %d pods, %d PodGroups",
        sizes["nodes"],
        sizes["pods"],
        sizes["pod_groups"],
    )
    if gangs is not None:
        for outcome in recover(gangs, state, state.view().nodes):
            log.warning("%s", outcome.message)
            if writer is not None:
                writer.announce(outcome.gang.key, Event("Warning", "PartlyBound", outcome.message))
    if writer is not None:
        writer.mark_all()


class _Worker(Protocol):
    def attach(self) -> None: ...

    async def run(self) -> None: ...


def _background(worker: _Worker) -> Callable[[web.Application], AsyncIterator[None]]:
    """Attach `worker` once this replica serves (leads, with a whole cache) and run it as long
    as the app runs: a standby writes nothing."""

    async def work(app: web.Application) -> None:
        await app[SERVING].wait()
        worker.attach()
        await worker.run()

    return _task(work, type(worker).__name__)


def _task(
    work: Callable[[web.Application], Coroutine[Any, Any, None]], name: str
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context running `work(app)` as a task for as long as the app runs. A task that
    fails stops the process (as losing the Lease does): a replica whose expiry, writers or
    preemptor died would go on answering from a ledger nobody keeps, with a healthy probe; the
    Deployment starts a fresh one, which recovers from the API server."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        def stop_on_failure(task: asyncio.Task[None]) -> None:
            if task.cancelled() or not isinstance(task.exception(), Exception):
                return  # done, or a SystemExit on its way out of the loop already
            log.critical(
                "background task %s failed; stopping the process so a fresh replica takes over",
                name,
                exc_info=task.exception(),
            )
            app[FAILED_TASKS].append(name)
            raise web.GracefulExit()  # out of the event loop, as a lost Lease does

        task = asyncio.create_task(work(app), name=name)
        task.add_done_callback(stop_on_failure)
        yield
        task.remove_done_callback(stop_on_failure)
        if task.done():
            return  # ended, or failed (and said so)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return context


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
