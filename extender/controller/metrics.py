"""Prometheus metrics of the Job controller, in a registry of its own (so tests can build several).

- `lahar_controller_reconciles_total{result}`: reconciles, `done` or `retried` (the handler
  raised and the key was queued again with backoff);
- `lahar_controller_reconcile_seconds`: time one reconcile of one Job took;
- `lahar_controller_queue_depth`, `lahar_controller_jobs`: the work queue's length and the Jobs
  in the store, read at scrape time;
- `lahar_jobs{queue,phase}`: those Jobs by their queue and `status.state.phase` (Pending when it
  has none yet), read at scrape time: a series for each queue and phase some Job is in;
- `lahar_leader{component="controller",lease}`: 1 on the replica that holds the Lease, 0 on a
  standby (the shell's gauge, `shell.leader_gauge`; the app gives it its series).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.api.scheduling import DEFAULT_QUEUE
from extender.controller.store import JobStore
from extender.controller.workqueue import Handler, WorkQueue
from extender.shell import leader_gauge


class JobPhases(Collector):
    """The Jobs the controller knows, by queue and phase, counted at scrape time."""

    def __init__(self, store: JobStore) -> None:
        self._store = store

    def collect(self) -> Iterable[Metric]:
        counts = collections.Counter(
            (job.spec.queue or DEFAULT_QUEUE, job.phase) for job in self._store.jobs.values()
        )
        family = GaugeMetricFamily(
            "lahar_jobs",
            "Volcano Jobs the controller knows, by queue and status.state.phase",
            labels=["queue", "phase"],
        )
        for (queue, phase), count in sorted(counts.items()):
            family.add_metric([queue, phase], count)
        return [family]


class ControllerMetrics:
    """The controller's registry: reconciles, their time, the queue, the Jobs known, and whether
    this replica leads."""

    def __init__(self, queue: WorkQueue, store: JobStore) -> None:
        self.registry = CollectorRegistry()
        self.reconciles = Counter(
            "lahar_controller_reconciles",
            "Job reconciles by result (done, retried)",
            ["result"],
            registry=self.registry,
        )
        self.seconds = Histogram(
            "lahar_controller_reconcile_seconds",
            "Time one reconcile of one Job took",
            registry=self.registry,
        )
        depth = Gauge(
            "lahar_controller_queue_depth", "Jobs waiting to be reconciled", registry=self.registry
        )
        depth.set_function(lambda: len(queue))
        jobs = Gauge("lahar_controller_jobs", "Jobs the controller knows", registry=self.registry)
        jobs.set_function(lambda: len(store.jobs))
        self.registry.register(JobPhases(store))
        self.leader = leader_gauge(self.registry)

    def timed(self, handler: Handler) -> Handler:
        """`handler`, counted by result and timed."""

        async def measured(key: str) -> float | None:
            started = time.perf_counter()
            try:
                again = await handler(key)
            except Exception:
                self.reconciles.labels("retried").inc()
                raise
            finally:
                self.seconds.observe(time.perf_counter() - started)
            self.reconciles.labels("done").inc()
            return again

        return measured
