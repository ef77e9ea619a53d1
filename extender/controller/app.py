"""`lahar controller` as an aiohttp app: informers into the job store, leader election, the work
queue's workers, and the probe and metrics endpoints.

The process shell (`extender.shell`) runs it: informers from the start (a standby keeps a warm
cache), the Lease, and the workers as a guarded task that reconciles only once this process leads
with a whole cache; losing the Lease, or the workers dying, ends the process. `/healthz` answers
while the process runs, `/readyz` once it leads and its cache is whole (so a Service in front sends
traffic only to the leader; a Lease it cannot take, `Shell.lease_problem`, is named in the 503
with its fix), `/metrics` in Prometheus' text format. With `hypernode_tiers` (`--hypernode-labels`)
the leader also keeps the HyperNodes built from node labels (`controller.hypernodes`); without it
the controller neither watches nodes nor writes HyperNodes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from aiohttp import web
from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION, Command, Job, JobPod
from extender.api.scheduling import API_VERSION
from extender.api.topology_labels import LabelTier
from extender.cache.informer import Informers, Kind
from extender.controller.hypernodes import keep_hyper_nodes
from extender.controller.metrics import ControllerMetrics
from extender.controller.reconcile import Reconciler
from extender.controller.store import JOB_POD_SELECTOR, JobStore, OwnedGroup
from extender.controller.workqueue import WorkQueue
from extender.kube.leader import LeaseOptions
from extender.shell import SHELL, guarded, informers, install, lead

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
    # The node labels whose values make HyperNodes, the nearest tier first (none: no HyperNodes).
    hypernode_tiers: tuple[LabelTier, ...] = ()


STORE: web.AppKey[JobStore] = web.AppKey("store", JobStore)
METRICS = web.AppKey("metrics", ControllerMetrics)


def make_app(api: k8s.ApiClient, options: ControllerOptions) -> web.Application:
    app = web.Application()
    store, queue = JobStore(), WorkQueue()
    store.on_change = queue.add
    app[STORE] = store
    app[METRICS] = metrics = ControllerMetrics(queue, store)
    shell = install(app, metrics.registry, lambda: _unready(app))
    lead(app, api, lease=options.lease)

    def build(app: web.Application) -> Informers[JobStore]:
        return Informers(api, store, asyncio.get_running_loop(), (JOBS, PODS, GROUPS, COMMANDS))

    def synced(app: web.Application) -> None:
        log.info("cache synced: %d jobs", len(store.jobs))

    app.cleanup_ctx.append(informers(build, synced))
    reconciler = metrics.timed(Reconciler(api, store, options.gated))

    async def work(app: web.Application) -> None:
        await shell.leading.wait()
        await shell.synced.wait()
        log.info("reconciling jobs with %d workers", options.workers)
        await queue.run(reconciler, options.workers)

    app.cleanup_ctx.append(guarded(work, "reconcile workers"))
    if options.hypernode_tiers:
        app.cleanup_ctx.extend(keep_hyper_nodes(api, options.hypernode_tiers))
    return app


def _unready(app: web.Application) -> str | None:
    shell = app[SHELL]
    if shell.leading.is_set() and shell.synced.is_set():
        return None
    if not shell.leading.is_set() and shell.lease_problem is not None:
        return f"not leading: this controller {shell.lease_problem}"
    return "not leading or cache not synced"
