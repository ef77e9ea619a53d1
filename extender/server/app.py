"""The extender app: what it holds, and the background work that lives as long as it does.

`make_app` wires a state, an engine (policy + tables), a binder and metrics into an aiohttp app.
With an API client, a `cleanup_ctx` starts the informers when the app starts and stops them when it
stops, and a periodic task expires assumed pods the watch never confirmed; without one (tests,
benchmarks) the state is whatever the caller filled in and the app is ready at once.

Until every informer has listed once (`Shell.synced`) and, with leader election, this replica
holds the Lease (`Shell.leading`), filter and bind calls wait and then refuse (`SERVING`): a
decision on half a cluster could bind a gang member whose PodGroup is not known yet, and two
replicas deciding at once could split a gang. Standbys keep their cache warm but answer nothing
and write nothing (readiness says so, so a Service sends the scheduler to the leader only). When a
replica starts to serve, gangs found partly bound are admitted before anything else
(`gangs.recovery`) and reported, and every PodGroup's status is brought up to date; its writers
(status, queues, HyperNode counts, waker, preemptor, and the run times of finished gangs:
`server.run_times_writer`, unless `record_run_times` is off) start only then. Losing the Lease
stops the process. A Lease it cannot take or read (no such namespace, forbidden:
`Shell.lease_problem`) is no standby's wait: readiness and the refusals kube-scheduler shows on
pods say what is wrong and what fixes it. `lahar_leader{component="extender"}` is 1 while this
replica leads (`Shell.leading`, whatever its cache), 0 on a standby.

Following the scheduler's Lease with `take_over_after` seconds, a ready standby watches the pod
whose scheduler holds it (`server.watchdog`, deciding by `server.takeover`) and evicts it when its
extender has not been ready for that long, so that this replica's scheduler takes over
(`lahar_leader_evictions_total`).

The process wiring is the shell's (`extender.shell`): probes and /metrics (also on `probes`, a
listener of their own), the informers, leadership (a Lease of its own or the scheduler's), and
background tasks guarded so that one that dies ends the process.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Collection
from typing import Protocol

from aiohttp import web
from kubernetes import client as k8s

from extender.actions.barrier import Barrier, BarrierObserver
from extender.actions.bind import Binder
from extender.api.candidates import CandidateParser
from extender.api.log_fields import about_gang, about_pod
from extender.api.scheduling import VOLCANO_SCHEDULER
from extender.cache.events import Events, later
from extender.cache.informer import Informers
from extender.cache.kinds import PROVISIONING_REQUESTS
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, GangAdmitted, GangRejected, dominant_share, view_gang
from extender.framework.policy import Policy
from extender.kube import AsyncApi
from extender.kube.leader import FollowOptions, LeaseOptions
from extender.server.adapters import (
    api_binder,
    api_event_sink,
    api_evictor,
    api_hyper_node_patch,
    api_lease_reader,
    api_lifter,
    api_patcher,
    api_pod_reader,
    api_queue_create,
    api_queue_patch,
    api_scale_up,
    api_status_patch,
)
from extender.server.gang_waits import GangHistory, gang_waits
from extender.server.group_status import PodGroupEvent
from extender.server.hyper_node_writer import HyperNodeWriter
from extender.server.keys import (
    BARRIER,
    BINDER,
    ENGINE,
    FOLLOWING,
    INFORMERS,
    METRICS,
    PARSER,
    PREEMPTOR,
    SERVING,
    STATE,
    STATUS,
    TLS,
)
from extender.server.metrics import ExtenderMetrics, QueueFigures, QueueGauges
from extender.server.preemptor import Preemptor
from extender.server.provisioner import Provisioner
from extender.server.queue_writer import QueueWriter
from extender.server.routes import add_routes, unready
from extender.server.run_times_writer import RunTimesWriter, api_run_recorder
from extender.server.status_writer import StatusWriter
from extender.server.takeover import Rule
from extender.server.tls import ServerTls
from extender.server.waker import Waker
from extender.server.watchdog import Watchdog
from extender.shell import (
    SHELL,
    Lifecycle,
    guarded,
    informers,
    install,
    lead,
    probe_listener,
    show_leading,
)

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
    take_over_after: float = 0.0,
    record_run_times: bool = True,
) -> web.Application:
    """The extender's app. With `lease` (and an API client) it serves only while it holds that
    Lease; with `follow`, while the kube-scheduler beside it holds the scheduler's Lease; with
    neither, it leads at once (a single replica, tests, benchmarks). `schedulers`: the
    schedulerNames it serves (`Engine`). `probes`: also answer /healthz, /readyz and /metrics
    (and nothing else) at this host and port, for a kubelet and Prometheus when the verbs listen
    on loopback only. `take_over_after`: with `follow`, evict the pod whose scheduler holds the
    Lease once its extender has not been ready for that many seconds (0: never).
    `record_run_times`: record how long each finished gang ran (`server.run_times_writer`)."""
    app = web.Application()
    app[TLS] = tls
    # One hub for what the state and the engine say happened, delivered after the call that
    # made the change (`cache.events`).
    app[STATE] = state if state is not None else ClusterState(events=Events(later))
    app[METRICS] = ExtenderMetrics(app[STATE].sizes, lambda: _informer_counts(app))
    shell = install(app, app[METRICS].registry, lambda: unready(app))
    _leadership(app, api, lease, follow)
    if tls is not None:
        app.cleanup_ctx.append(_reloading(tls))
    if probes is not None:
        app.cleanup_ctx.append(probe_listener(*probes))
    app[ENGINE] = Engine(policy, schedulers, events=app[STATE].events)
    app[PARSER] = CandidateParser(known=app[STATE].known_pod)
    app[INFORMERS] = None
    if api is None:  # no cache to fill: serve as soon as this replica leads
        shell.synced.set()
        if shell.leading.is_set():
            app[SERVING].set()
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
    if api is not None:  # (before the writers: cleanup runs backwards, the cache stops last)
        app.cleanup_ctx.append(informers(_informers(api), _serve))
        app.cleanup_ctx.append(guarded(lambda app: _expire(app[STATE], app[ENGINE]), "expiry"))
    engine = app[ENGINE]
    if engine.gang_rules:
        _gang_rules(app, engine, binder)
        if api is not None and writes is not None:
            _writers(app, api, writes, engine, record_run_times)
    if api is not None:  # (with gang rules or without: the topology is the cluster's)
        counts = HyperNodeWriter(app[STATE], api_hyper_node_patch(api), ready=app[SERVING])
        app.cleanup_ctx.append(_background(counts))
    _watchdog(app, api, writes, follow, take_over_after)
    add_routes(app)
    return app


def _leadership(
    app: web.Application,
    api: k8s.ApiClient | None,
    lease: LeaseOptions | None,
    follow: FollowOptions | None,
) -> None:
    """When this replica leads: holding `lease`, while its scheduler holds `follow`'s, or at
    once with neither (`shell.lead`). It serves once it leads with a whole cache; ceasing to lead
    it serves no more (and the process ends). `lahar_leader` shows whether it leads."""
    app[SERVING] = asyncio.Event()
    app[FOLLOWING] = follow is not None
    lead(app, api, lease=lease, follow=follow, on_lead=_serve, on_leave=_cease)
    show_leading(app[METRICS].leader, "extender", lease or follow, app[SHELL])


def _watchdog(
    app: web.Application,
    api: k8s.ApiClient | None,
    writes: AsyncApi | None,
    follow: FollowOptions | None,
    bound: float,
) -> None:
    """Following the scheduler's Lease with a `bound`: on a ready standby, from the start, evict
    the leading pod whose extender has not been ready for `bound` seconds."""
    if api is None or writes is None or follow is None or bound <= 0:
        return
    shell = app[SHELL]
    dog = Watchdog(
        Rule(follow.namespace, follow.name, follow.identity, bound),
        standing=lambda: (shell.leading.is_set(), unready(app)),
        read_lease=api_lease_reader(writes, follow.namespace, follow.name),
        read_pod=api_pod_reader(writes),
        evict=api_evictor(api),
    )
    dog.on_evicted = app[METRICS].leader_evictions.inc
    app.cleanup_ctx.append(guarded(lambda app: dog.run(), "leader watchdog"))


def _gang_rules(app: web.Application, engine: Engine, binder: Binder) -> None:
    """The bind barrier, and the gang rules' metrics."""
    metrics, state = app[METRICS], app[STATE]
    observer = BarrierObserver(
        waited=metrics.barrier_wait.observe,
        timed_out=lambda key: metrics.barrier_timeouts.inc(),
        waited_on=lambda key: metrics.barrier_retries.inc(),
        partial=lambda key: metrics.partial_gangs.inc(),
        stood=lambda key: metrics.stood(view_gang(state, key)),
    )
    app[BARRIER] = barrier = Barrier(app[STATE], engine, binder, observer)
    metrics.members_waiting.set_function(barrier.waiting)
    engine.events.subscribe(
        GangAdmitted, lambda event: metrics.admitted(view_gang(state, event.key))
    )
    engine.events.subscribe(
        GangRejected, lambda event: metrics.gang_rejections.labels(event.rejection.cause).inc()
    )
    metrics.pending_gangs.set_function(lambda: len(engine.refused()))
    metrics.pods_in_flight.set_function(engine.in_flight)
    figures = QueueGauges(lambda: _queue_figures(state, engine, metrics.clock(), metrics.history))
    metrics.registry.register(figures)


def _writers(
    app: web.Application,
    api: k8s.ApiClient,
    writes: AsyncApi,
    engine: Engine,
    record_run_times: bool,
) -> None:
    """What the leader writes back: lifted gates and woken pods, PodGroup and Queue status,
    preemptions, and (`record_run_times`) how long each finished gang ran, learnt from the
    status writer's events."""
    metrics = app[METRICS]
    sink = api_event_sink(api)
    if record_run_times:
        runs = RunTimesWriter(app[STATE], api_run_recorder(api), ready=app[SERVING])
        runs.on_recorded = metrics.run_times_recorded.inc
        runs.on_failed = metrics.run_times_record_failures.inc
        sink = runs.watching(sink)
        app.cleanup_ctx.append(_background(runs))
    waker = Waker(app[STATE], engine, api_patcher(writes), api_lifter(writes))
    waker.on_woken = metrics.wakes.inc
    waker.on_lifted = metrics.gates_lifted.inc
    app.cleanup_ctx.append(_background(waker))
    app[STATUS] = writer = StatusWriter(
        app[STATE],
        engine,
        # (a CRD without the status subresource is Volcano's: with Volcano's scheduler gone, as
        # when Lahar answers to `volcano`, the status goes onto the object itself)
        api_status_patch(api, on_object=lambda: VOLCANO_SCHEDULER in engine.schedulers),
        sink,
        ready=app[SERVING],
        schedulers=engine.schedulers or None,  # (none named: every group is ours)
    )
    app.cleanup_ctx.append(_background(writer))
    queues = QueueWriter(
        app[STATE], engine, api_queue_patch(api), api_queue_create(api), ready=app[SERVING]
    )
    app.cleanup_ctx.append(_background(queues))
    provisioner = Provisioner(
        app[STATE],
        app[ENGINE],
        api_scale_up(writes),
        served=lambda: _served(app, PROVISIONING_REQUESTS.name),
        changed=writer.mark,
        provisioned=waker.poke,
        ready=app[SERVING],
    )
    provisioner.on_created = metrics.provisioning_requests_created.inc
    provisioner.on_deleted = metrics.provisioning_requests_deleted.inc
    metrics.provisioning_requests.read = engine.request_phases
    app.cleanup_ctx.append(_background(provisioner))
    if engine.preemption is not None:
        app[PREEMPTOR] = preemptor = Preemptor(
            app[STATE], engine, api_evictor(api), writer.announce, ready=app[SERVING]
        )
        metrics.count_victims(preemptor)
        app.cleanup_ctx.append(_background(preemptor))


def _reloading(tls: ServerTls) -> Lifecycle:
    """Check the certificate files every `interval`: cert-manager rewrites them in place."""

    async def loop(app: web.Application) -> None:
        while True:
            await asyncio.sleep(tls.files.interval)
            try:
                tls.reload()
            except (OSError, ValueError):  # ssl.SSLError is an OSError
                log.exception("reloading the TLS files failed; serving the loaded ones")

    return guarded(loop, "TLS reload")


def _queue_figures(
    state: ClusterState, engine: Engine, now: float, history: GangHistory
) -> QueueFigures:
    """The queues' figures, and the gangs that wait (`now`: the wall clock)."""
    views = engine.queues(state)
    total = state.capacity()
    waiting: Counter[str] = Counter()
    shares = {}
    for key in {*state.pod_groups, *engine.refused()}:
        gang = view_gang(state, key)
        if key in engine.refused():
            waiting[gang.queue] += 1
        if gang.group is not None and (gang.placed or gang.pending):  # finished: no series
            # (the podgroup label: its name, kind-qualified for Coscheduling's and native ones)
            namespace, _, name = key.partition("/")
            shares[(namespace, name, gang.queue)] = dominant_share(gang.allocated, total)
    return QueueFigures(views, waiting, shares, gang_waits(state, engine, now, history))


def _served(app: web.Application, kind: str) -> bool:
    """Whether the API server serves the (optional) kind the informer named `kind` reads."""
    running = app[INFORMERS]
    if running is None:
        return False
    return any(i.kind.name == kind and i.synced and not i.absent for i in running.items)


def _informer_counts(app: web.Application) -> list[tuple[str, int, int]]:
    running = app[INFORMERS]
    if running is None:
        return []
    return [(i.kind.name, i.relists, i.reconnects) for i in running.items]


def _informers(api: k8s.ApiClient) -> Callable[[web.Application], Informers[ClusterState]]:
    def build(app: web.Application) -> Informers[ClusterState]:
        app[INFORMERS] = built = Informers(api, app[STATE], asyncio.get_running_loop())
        return built

    return build


def _serve(app: web.Application) -> None:
    """Once this replica leads and its cache is whole: complete partly bound gangs first,
    refresh statuses, then serve (even if the first two fail: a bug there must not refuse every
    call forever)."""
    shell = app[SHELL]
    if app[SERVING].is_set() or not (shell.synced.is_set() and shell.leading.is_set()):
        return
    try:
        _recover(app)
    except Exception:
        log.exception("recovering gangs after the cache sync failed; serving anyway")
    finally:
        app[SERVING].set()


def _cease(app: web.Application) -> None:
    """No longer leading: serve nothing more (the process is ending)."""
    app[SERVING].clear()


def _recover(app: web.Application) -> None:
    state, engine, writer = app[STATE], app[ENGINE], app[STATUS]
    sizes = state.sizes()
    log.info(
        "cache synced: %d nodes, %d pods, %d PodGroups",
        sizes["nodes"],
        sizes["pods"],
        sizes["pod_groups"],
    )
    for outcome in engine.recover(state):
        gang = outcome.gang
        log.warning("%s", outcome.message, extra=about_gang(gang.key, queue=gang.queue))
        if writer is not None:
            writer.announce(
                outcome.gang.key, PodGroupEvent("Warning", "PartlyBound", outcome.message)
            )
    if writer is not None:
        writer.mark_all()


class _Worker(Protocol):
    def attach(self) -> None: ...

    async def run(self) -> None: ...


def _background(worker: _Worker) -> Lifecycle:
    """Attach `worker` once this replica serves (leads, with a whole cache) and run it as long
    as the app runs: a standby writes nothing."""

    async def work(app: web.Application) -> None:
        await app[SERVING].wait()
        worker.attach()
        await worker.run()

    return guarded(work, type(worker).__name__)


async def _expire(state: ClusterState, engine: Engine) -> None:
    """Drop assumptions the watch never confirmed and reservations that made no progress."""
    while True:
        await asyncio.sleep(EXPIRY_INTERVAL)
        for key in engine.expire():
            log.warning(
                "gang %s kept its reservation without progress; released it and backing off",
                key,
                extra=about_gang(key),
            )
        for uid in state.expire_assumed():
            pod = state.pods.get(uid)
            log.warning(
                "assumed binding of pod %s was never seen by the watch; no longer counted",
                pod.key if pod else uid,
                extra=about_pod(pod.key) if pod else {},
            )
