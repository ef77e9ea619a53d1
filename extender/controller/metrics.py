"""Prometheus metrics of the Job controller, in a registry of its own (so tests can build several).

- `lahar_controller_reconciles_total{result}`: reconciles, `done` or `retried` (the handler
  raised and the key was queued again with backoff);
- `lahar_controller_reconcile_seconds`: time one reconcile of one Job took;
- `lahar_controller_queue_depth`, `lahar_controller_jobs`: the work queue's length and the Jobs
  in the store, read at scrape time;
- `lahar_leader{component="controller",lease}`: 1 on the replica that holds the Lease, 0 on a
  standby (the shell's gauge, `shell.leader_gauge`; the app gives it its series).
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from extender.controller.store import JobStore
from extender.controller.workqueue import Handler, WorkQueue
from extender.shell import leader_gauge


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
