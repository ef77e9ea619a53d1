"""`lahar controller` as an aiohttp app: informers into the job store, leader election, the work
queue's workers, and the probe and metrics endpoints.

The process shell (`extender.shell`) runs it: informers from the start (a standby keeps a warm
cache), the Lease, and the workers as a guarded task that reconciles only once this process leads
with a whole cache; losing the Lease, or the workers dying, ends the process. `/healthz` answers
while the process runs; `/readyz` once it could serve if it led: its cache is whole and, standing
by, it can take its Lease (the API server lets it, and an attempt read the Lease within the lease
duration: `shell.cannot_take_over`). So a healthy standby is ready, a rollout of two replicas
completes and a PodDisruptionBudget counts both; a Lease it cannot take (`Shell.lease_problem`) is
named in the 503 with its fix. Nothing routes traffic by readiness: who leads is the Lease's holder
and `lahar_leader` on /metrics, with the rest of the registry in Prometheus' text format. Jobs are
reconciled only for the scheduler names served (`scheduler_names`, `--scheduler-name`); the
Commands aimed at a Queue have a work queue and one worker of their own (`queue_commands`),
started with the Job workers. With
`hypernode_tiers` (`--hypernode-labels`) the leader also keeps the HyperNodes built from node labels
(`controller.hypernodes`), its node informer part of the cache readiness waits for; without it the
controller neither watches nodes nor writes HyperNodes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web
from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION, Command, Job, JobPod
from extender.api.scheduling import API_VERSION, SERVED_SCHEDULERS
from extender.api.topology_labels import LabelTier
from extender.cache.informer import Informers
from extender.cache.kinds import Kind
from extender.controller.hypernodes import keep_hyper_nodes
from extender.controller.metrics import ControllerMetrics
from extender.controller.queue_commands import QueueCommandRunner
from extender.controller.reconcile import Reconciler
from extender.controller.served import Served
from extender.controller.store import JOB_POD_SELECTOR, JobStore, OwnedGroup
from extender.controller.workqueue import WorkQueue
from extender.kube.leader import LeaseOptions
from extender.shell import (
    SHELL,
    cannot_take_over,
    guarded,
    informers,
    install,
    lead,
    show_leading,
)

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
    object_kind="Pod",
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
    # The schedulerNames whose Jobs are reconciled (a Job naming none counts as the first), and
    # whose pods are created once Lahar admits their gang (`api.job_pods.waits_for_admission`).
    scheduler_names: tuple[str, ...] = SERVED_SCHEDULERS
    # The node labels whose values make HyperNodes, the nearest tier first (none: no HyperNodes).
    hypernode_tiers: tuple[LabelTier, ...] = ()


STORE: web.AppKey[JobStore] = web.AppKey("store", JobStore)
METRICS = web.AppKey("metrics", ControllerMetrics)


def make_app(api: k8s.ApiClient, options: ControllerOptions) -> web.Application:
    app = web.Application()
    store, queue, queue_commands = JobStore(), WorkQueue("Job"), WorkQueue("Command")
    store.on_change = queue.add
    store.queue_commands.on_change = queue_commands.add
    app[STORE] = store
    app[METRICS] = metrics = ControllerMetrics(queue, store)
    caches: list[asyncio.Event] = []  # listed before it is ready, besides the job store's
    shell = install(app, metrics.registry, lambda: _unready(app, options.lease, caches))
    lead(app, api, lease=options.lease)
    show_leading(metrics.leader, "controller", options.lease, shell)

    def build(app: web.Application) -> Informers[JobStore]:
        return Informers(api, store, asyncio.get_running_loop(), (JOBS, PODS, GROUPS, COMMANDS))

    def synced(app: web.Application) -> None:
        log.info("cache synced: %d jobs", len(store.jobs))

    app.cleanup_ctx.append(informers(build, synced))
    served = Served(options.scheduler_names)
    reconciler = metrics.timed(Reconciler(api, store, frozenset(served.names), served))
    performer = QueueCommandRunner(api, store.queue_commands)

    async def work(app: web.Application) -> None:
        await shell.leading.wait()
        await shell.synced.wait()
        log.info(
            "reconciling jobs for schedulers %s with %d workers",
            ", ".join(served.names),
            options.workers,
        )
        await queue.run(reconciler, options.workers)

    async def commands(app: web.Application) -> None:
        await shell.leading.wait()
        await shell.synced.wait()
        await queue_commands.run(performer, 1)  # one at a time, in the order they came

    app.cleanup_ctx.append(guarded(work, "reconcile workers"))
    app.cleanup_ctx.append(guarded(commands, "queue commands"))
    if options.hypernode_tiers:
        keeping, nodes_listed = keep_hyper_nodes(api, options.hypernode_tiers)
        app.cleanup_ctx.extend(keeping)
        caches.append(nodes_listed)
    return app


def _unready(
    app: web.Application, lease: LeaseOptions | None, caches: Sequence[asyncio.Event]
) -> str | None:
    """Why /readyz answers 503 (None: ready): ready when this replica could serve if it led.
    Leading or not is no part of it: a standby that could take over is as ready as the leader."""
    shell = app[SHELL]
    leading = shell.leading.is_set()
    if not leading and lease is not None:
        why = cannot_take_over(shell, lease, time.monotonic())
        if why is not None:
            return f"not leading: this controller {why}"
    if not (shell.synced.is_set() and all(cache.is_set() for cache in caches)):
        return f"{'leading' if leading else 'standby'}: cache not synced"
    return None
