"""`lahar controller` as an aiohttp app: informers into the job store, leader election, the work
queue's workers, and the probe and metrics endpoints.

Background work is attached with `cleanup_ctx`, so it starts and stops with the app. Informers run
from the start (a standby keeps a warm cache), but workers reconcile only while this process
leads; losing the Lease stops the app. `/healthz` answers while the process runs, `/readyz` once
it leads and its cache is whole (so a Service in front sends traffic only to the leader),
`/metrics` in Prometheus' text format.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from kubernetes import client as k8s
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION, Command, Job, JobPod
from extender.api.scheduling import API_VERSION
from extender.cache.informer import Informers, Kind
from extender.controller.metrics import ControllerMetrics
from extender.controller.reconcile import Reconciler
from extender.controller.store import JOB_POD_SELECTOR, JobStore, OwnedGroup
from extender.controller.workqueue import WorkQueue
from extender.kube.leader import Elector, LeaseOptions

log = logging.getLogger(__name__)

JOBS: Kind[JobStore, Job] = Kind(
    "jobs",
    f"/apis/{BATCH_API_VERSION}/jobs",
    Job,
    JobStore.replace_jobs,
    JobStore.upsert_job,
    JobStore.delete_job,
)
PODS: Kind[JobStore, JobPod] = Kind(
    "pods",
    "/api/v1/pods",
    JobPod,
    JobStore.replace_pods,
    JobStore.upsert_pod,
    JobStore.delete_pod,
    selector=JOB_POD_SELECTOR,
)
GROUPS: Kind[JobStore, OwnedGroup] = Kind(
    "podgroups",
    f"/apis/{API_VERSION}/podgroups",
    OwnedGroup,
    JobStore.replace_groups,
    JobStore.upsert_group,
    JobStore.delete_group,
)

COMMANDS: Kind[JobStore, Command] = Kind(
    "commands",
    f"/apis/{BUS_API_VERSION}/commands",
    Command,
    JobStore.replace_commands,
    JobStore.upsert_command,
    JobStore.delete_command,
)


@dataclass(frozen=True)
class ControllerOptions:
    workers: int = 4
    lease: LeaseOptions | None = None  # None: no leader election (a single replica)
    # The schedulers whose pods are created behind Lahar's gate (Lahar's profiles).
    gated: frozenset[str] = frozenset({"lahar", "volcano"})


@dataclass
class Runtime:
    """What the probes report and how the run ended."""

    synced: asyncio.Event = field(default_factory=asyncio.Event)
    leading: asyncio.Event = field(default_factory=asyncio.Event)
    lost_lease: bool = False


STORE: web.AppKey[JobStore] = web.AppKey("store", JobStore)
RUNTIME: web.AppKey[Runtime] = web.AppKey("runtime", Runtime)
METRICS = web.AppKey("metrics", ControllerMetrics)


def make_app(api: k8s.ApiClient, options: ControllerOptions) -> web.Application:
    app = web.Application()
    store, queue = JobStore(), WorkQueue()
    store.on_change = queue.add
    app[STORE] = store
    app[RUNTIME] = Runtime()
    app[METRICS] = ControllerMetrics(queue, store)
    app.cleanup_ctx.append(_run(api, options, queue))
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    return app


def _run(
    api: k8s.ApiClient, options: ControllerOptions, queue: WorkQueue
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def context(app: web.Application) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        store, runtime = app[STORE], app[RUNTIME]
        informers = Informers(api, store, loop, (JOBS, PODS, GROUPS, COMMANDS))

        def synced() -> None:
            log.info("cache synced: %d jobs", len(store.jobs))
            runtime.synced.set()

        informers.on_synced.append(synced)
        informers.start()
        if options.lease is None:
            runtime.leading.set()
        else:
            Elector(api, options.lease, runtime.leading, lambda: _lost(runtime)).start()
        reconciler = app[METRICS].timed(Reconciler(api, store, options.gated))
        work = asyncio.create_task(_work(app, queue, reconciler, options.workers))
        yield
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        await asyncio.to_thread(informers.stop)

    return context


async def _work(app: web.Application, queue: WorkQueue, reconciler: Any, workers: int) -> None:
    await app[RUNTIME].leading.wait()
    await app[RUNTIME].synced.wait()
    log.info("reconciling jobs with %d workers", workers)
    await queue.run(reconciler, workers)


def _lost(runtime: Runtime) -> None:
    """The Lease is gone: stop (on the loop: GracefulExit ends `run_app`), so that another
    replica leads alone."""
    runtime.leading.clear()
    runtime.lost_lease = True
    raise web.GracefulExit()


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _readyz(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME]
    if runtime.leading.is_set() and runtime.synced.is_set():
        return web.Response(text="ok")
    return web.Response(status=503, text="not leading or cache not synced")


async def _metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
