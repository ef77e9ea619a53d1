"""Prometheus metrics of the extender, in a registry per app (so tests and benchmarks can run
several apps in one process).

- `lahar_extender_requests_total{verb,result}`: calls per verb; result is ok, bad_request, error,
  forbidden or unavailable.
- `lahar_extender_request_duration_seconds{verb}`: latency histogram per verb, from request read to
  reply written.
- `lahar_binds_total{result}`: bindings created or refused.
- `lahar_cache_objects{kind}`: objects in the cache (nodes, pods, assumed_pods, priority_classes),
  read from the state at scrape time.
- `lahar_cache_relists_total{kind}`, `lahar_cache_watch_reconnects_total{kind}`: informer health.
- Gangs: `lahar_gangs_admitted_total`, `lahar_gang_rejections_total{cause}` (one per new verdict
  on a waiting gang: rejected anew, or for a new cause; not one per member asked),
  `lahar_gang_barrier_wait_seconds` (histogram per held member),
  `lahar_gang_barrier_timeouts_total`, `lahar_partial_gangs_total` (must stay 0),
  `lahar_pending_gangs` (gangs waiting for admission), `lahar_gang_members_held` (bind calls
  held at the barrier now), `lahar_gang_wakes_total` (pods requeued),
  `lahar_gang_gates_lifted_total` (pods whose gang was let in), `lahar_gang_barrier_retries_total`
  (barriers that timed out while the missing members waited in the scheduler's queue),
  `lahar_gang_pods_in_flight` (admitted members not yet at the barrier).
- Autoscaling: `lahar_provisioning_requests_created_total`, `..._deleted_total` (Cluster
  Autoscaler's ProvisioningRequests Lahar made for gangs waiting for nodes, and removed),
  `lahar_provisioning_requests` (those standing now, one per gang).
- Queues, read from the fair order at scrape time (Volcano's names with Lahar's prefix):
  `lahar_queue_allocated_{milli_cpu,memory_bytes}{queue}`, `lahar_queue_deserved_*`,
  `lahar_queue_capacity_*` (capability; absent when uncapped), `lahar_queue_share{queue}`,
  `lahar_queue_weight{queue}`, `lahar_queue_overused{queue}` (0/1), `lahar_queue_pending_gangs`;
  `lahar_job_share{namespace,podgroup,queue}` (DRF: the largest fraction of the cluster a gang
  with members running or waiting holds of any resource; `podgroup` is the name, kind-qualified
  for the other kinds: `podgroups.scheduling.x-k8s.io/NAME`);
  `lahar_pod_preemption_victims_total` (pods evicted for its preemptions and reclaims).
- `lahar_leader{component="extender",lease}`: 1 on the replica that leads (its scheduler holds the
  Lease it follows, or it holds its own), 0 on a standby (the shell's gauge,
  `shell.leader_gauge`; the app gives it its series).
- `lahar_leader_evictions_total`: leading pods this standby evicted because their extender had
  not been ready for `--take-over-after` seconds (`server.watchdog`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.api.resources import CPU, MEMORY
from extender.gangs.queues import QueueView
from extender.shell import leader_gauge

# Filter and prioritize sit on the scheduler's serial path: resolve well below a millisecond.
BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class _Gauges(Collector):
    def __init__(
        self,
        sizes: Callable[[], Mapping[str, int]],
        informers: Callable[[], Iterable[tuple[str, int, int]]],
    ) -> None:
        self._sizes, self._informers = sizes, informers

    def collect(self) -> Iterable[Metric]:
        objects = GaugeMetricFamily("lahar_cache_objects", "Objects in the cache", labels=["kind"])
        for kind, count in self._sizes().items():
            objects.add_metric([kind], count)
        relists = CounterMetricFamily(
            "lahar_cache_relists", "Full lists of a watched kind", labels=["kind"]
        )
        reconnects = CounterMetricFamily(
            "lahar_cache_watch_reconnects", "Watches retried after an error", labels=["kind"]
        )
        for kind, relisted, reconnected in self._informers():
            relists.add_metric([kind], relisted)
            reconnects.add_metric([kind], reconnected)
        return [objects, relists, reconnects]


@dataclass(frozen=True)
class QueueFigures:
    views: Mapping[str, QueueView]
    waiting: Mapping[str, int]  # gangs waiting for admission, by queue
    job_shares: Mapping[tuple[str, str, str], float]  # (namespace, podgroup, queue) -> share


_UNITS = ((CPU, "milli_cpu"), (MEMORY, "memory_bytes"))


class QueueGauges(Collector):
    """Per-queue figures, computed at scrape time without touching any scheduling state."""

    def __init__(self, figures: Callable[[], QueueFigures]) -> None:
        self._figures = figures

    def collect(self) -> Iterable[Metric]:
        figures = self._figures()
        views, waiting = figures.views, figures.waiting
        families: dict[str, GaugeMetricFamily] = {}

        def gauge(name: str, text: str, queue: str, value: float) -> None:
            if name not in families:
                families[name] = GaugeMetricFamily(f"lahar_{name}", text, labels=["queue"])
            families[name].add_metric([queue], value)

        for view in views.values():
            name = view.name
            for field, amounts in (
                ("allocated", view.allocated),
                ("deserved", view.deserved),
                ("capacity", view.queue.spec.capability),
            ):
                for resource, unit in _UNITS:
                    if field != "capacity" or resource in amounts:  # uncapped: no sample
                        text = f"Queue {field}: {resource}"
                        gauge(f"queue_{field}_{unit}", text, name, amounts[resource])
            gauge("queue_share", "Allocated / deserved (max over resources)", name, view.share)
            gauge("queue_weight", "Queue weight", name, view.queue.spec.weight)
            gauge("queue_overused", "1 when holding more than deserved", name, view.overused)
            gauge("queue_pending_gangs", "Gangs waiting for admission", name, waiting.get(name, 0))
        jobs = GaugeMetricFamily(
            "lahar_job_share",
            "DRF share of a gang: the largest fraction of the cluster it holds of any resource",
            labels=["namespace", "podgroup", "queue"],
        )
        for labels, value in sorted(figures.job_shares.items()):
            jobs.add_metric(list(labels), value)
        return [*families.values(), jobs]


class ExtenderMetrics:
    """The extender's registry: its calls, bindings, cache, gang rules, queues, and whether this
    replica leads."""

    def __init__(
        self,
        sizes: Callable[[], Mapping[str, int]],
        informers: Callable[[], Iterable[tuple[str, int, int]]] = lambda: (),
    ) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "lahar_extender_requests",
            "Extender calls by verb and result (ok, bad_request, error, forbidden, unavailable)",
            ["verb", "result"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "lahar_extender_request_duration_seconds",
            "Extender call latency by verb",
            ["verb"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.binds = Counter(
            "lahar_binds", "Bindings by result (bound, refused)", ["result"], registry=self.registry
        )
        self.registry.register(_Gauges(sizes, informers))

        self.gangs_admitted = Counter(
            "lahar_gangs_admitted", "Gangs admitted (capacity reserved)", registry=self.registry
        )
        self.gang_rejections = Counter(
            "lahar_gang_rejections",
            "Gangs rejected anew or for a new cause, by cause",
            ["cause"],
            registry=self.registry,
        )
        self.barrier_wait = Histogram(
            "lahar_gang_barrier_wait_seconds",
            "Time a gang member's bind was held at the barrier",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30),
            registry=self.registry,
        )
        self.barrier_timeouts = Counter(
            "lahar_gang_barrier_timeouts", "Gangs whose barrier timed out", registry=self.registry
        )
        self.partial_gangs = Counter(
            "lahar_partial_gangs",
            "Gangs left partly bound (a binding refused after others were made)",
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "lahar_extender_certificate_expiry_timestamp_seconds",
            "When the served certificate ends (Unix time; 0 without HTTPS)",
            registry=self.registry,
        )
        self.pending_gangs = Gauge(
            "lahar_pending_gangs", "Gangs waiting for admission", registry=self.registry
        )
        self.members_held = Gauge(
            "lahar_gang_members_held",
            "Bind calls of gang members held at the barrier now",
            registry=self.registry,
        )
        self.preemption_victims = Counter(
            "lahar_pod_preemption_victims",
            "Pods evicted for Lahar's preemptions and reclaims",
            registry=self.registry,
        )
        self.wakes = Counter(
            "lahar_gang_wakes", "Parked pods Lahar had the scheduler retry", registry=self.registry
        )
        self.gates_lifted = Counter(
            "lahar_gang_gates_lifted",
            "Pods whose gang Lahar let in: its scheduling gate lifted",
            registry=self.registry,
        )
        self.barrier_retries = Counter(
            "lahar_gang_barrier_retries",
            "Barriers timed out while the missing members still waited in the scheduler's "
            "queue: the gang kept its reservation and the held members were placed again",
            registry=self.registry,
        )
        self.pods_in_flight = Gauge(
            "lahar_gang_pods_in_flight",
            "Members of admitted gangs not yet at the bind barrier",
            registry=self.registry,
        )
        self.provisioning_requests_created = Counter(
            "lahar_provisioning_requests_created",
            "ProvisioningRequests Lahar made to ask Cluster Autoscaler for a gang's nodes",
            registry=self.registry,
        )
        self.provisioning_requests_deleted = Counter(
            "lahar_provisioning_requests_deleted",
            "ProvisioningRequests Lahar deleted (their gang ran, went, or wanted no nodes)",
            registry=self.registry,
        )
        self.provisioning_requests = Gauge(
            "lahar_provisioning_requests",
            "ProvisioningRequests of Lahar's standing now (one per gang waiting for nodes)",
            registry=self.registry,
        )
        self.leader = leader_gauge(self.registry)
        self.leader_evictions = Counter(
            "lahar_leader_evictions",
            "Leading scheduler pods this standby evicted because their extender had not been "
            "ready for --take-over-after seconds",
            registry=self.registry,
        )
