"""Prometheus metrics of the extender, in a registry per app (so tests and benchmarks can run
several apps in one process). What needs a walk over the gangs or the queues is worked out at
scrape time, by collectors (`QueueGauges`, `RequestStates`), so filter, prioritize and bind pay
no more than a counter's increment or a histogram's observation for any of it.

- `lahar_extender_requests_total{verb,result}`: calls per verb; result is ok, bad_request, error,
  forbidden or unavailable.
- `lahar_extender_request_duration_seconds{verb}`: latency histogram per verb, for every result,
  from the handler's start to its reply built (`server.routes`).
- `lahar_binds_total{result}`: bindings created or refused.
- `lahar_cache_objects{kind}`: objects in the cache (nodes, pods, assumed_pods, priority_classes),
  read from the state at scrape time.
- `lahar_cache_relists_total{kind}`, `lahar_cache_watch_reconnects_total{kind}`: informer health.
- Gangs: `lahar_gangs_admitted_total`, `lahar_gang_rejections_total{cause}` (one per new verdict
  on a waiting gang: rejected anew, or for a new cause; not one per member asked),
  `lahar_gang_time_to_admission_seconds{queue}` and `lahar_gang_time_to_bound_seconds{queue}`
  (histograms from the PodGroup's creationTimestamp, on the wall clock, to its first admission
  and to the first moment its minMember-th member is bound, observed where admission and binding
  happen), `lahar_gangs_waiting{queue,cause}` and `lahar_gangs_waiting_oldest_seconds` (the
  waiting gangs by the cause of their latest rejection, `NotAskedYet` for those the fair order
  has a turn for that were never judged; read at scrape time; which gangs, and since when, is
  `server.gang_waits`'),
  `lahar_gang_barrier_wait_seconds` (histogram per member that waited at the barrier),
  `lahar_gang_barrier_timeouts_total`, `lahar_partial_gangs_total` (must stay 0),
  `lahar_pending_gangs` (gangs waiting for admission), `lahar_gang_members_held` (bind calls
  waiting at the barrier now), `lahar_gang_wakes_total` (pods requeued),
  `lahar_gang_gates_lifted_total` (pods whose gang was let in), `lahar_gang_barrier_retries_total`
  (barriers that timed out while the missing members waited in the scheduler's queue),
  `lahar_gang_pods_in_flight` (admitted members not yet at the barrier).
- Autoscaling: `lahar_provisioning_requests_created_total`, `..._deleted_total` (Cluster
  Autoscaler's ProvisioningRequests Lahar made for gangs waiting for nodes, and removed),
  `lahar_provisioning_requests{state}` (those standing now, one per gang, by the state Cluster
  Autoscaler's conditions give it: every state, 0 when none is in it; read at scrape time).
- Queues, read from the fair order at scrape time (Volcano's names with Lahar's prefix):
  `lahar_queue_allocated_{milli_cpu,memory_bytes}{queue}`, `lahar_queue_deserved_*`,
  `lahar_queue_capacity_*` (capability; absent when uncapped), `lahar_queue_guarantee_*` (absent
  when nothing is guaranteed), and every other resource (`pods`, GPUs, extended resources) in its
  own units as `lahar_queue_{allocated,deserved,capacity,guarantee}_scalar_resources{queue,
  resource}` (allocated and deserved: each resource the queue is allocated or deserves, so a queue's
  GPUs read 0 rather than nothing once its jobs end), `lahar_queue_share{queue}`,
  `lahar_queue_weight{queue}`, `lahar_queue_overused{queue}` (0/1), `lahar_queue_pending_gangs`;
  `lahar_job_share{namespace,podgroup,queue}` (DRF: the largest fraction of the cluster a gang
  with members running or waiting is allocated of any resource; `podgroup` is the name,
  kind-qualified for the other kinds: `podgroups.scheduling.x-k8s.io/NAME`);
  `lahar_pod_preemption_victims_total{reason}` (pods evicted for its preemptions, `preempt`: a
  victim of the preemptor's own queue, and reclaims, `reclaim`: of another queue; each pod once,
  `server.preemptor`).
- `lahar_leader{component="extender",lease}`: 1 on the replica that leads (its scheduler holds the
  Lease it follows, or it holds its own), 0 on a standby (the shell's gauge,
  `shell.leader_gauge`; the app gives it its series).
- `lahar_leader_evictions_total`: leading pods this standby evicted because their extender had
  not been ready for `--take-over-after` seconds (`server.watchdog`).
- `lahar_run_times_recorded_total`, `lahar_run_times_record_failures_total`: finished gangs' run
  times written to the ConfigMap `lahar-system/lahar-run-times`, and the writes of them that
  failed (their runs kept for the next one: `server.run_times_writer`).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.api.provisioning import ACCEPTED, ENDED, PROVISIONED
from extender.api.resources import CPU, MEMORY, Resources
from extender.api.scheduling import PodGroup
from extender.framework.engine import GangView, QueueView
from extender.server.gang_waits import GangHistory, Wait, since_made
from extender.server.preemptor import Preemptor
from extender.shell import leader_gauge

# Filter and prioritize sit on the scheduler's serial path: resolve well below a millisecond.
BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# A batch gang waits from seconds (an idle cluster) to a day (a queue far past its share).
_SECONDS, _MINUTES, _HOURS = (1, 2, 5, 10, 20, 30), (1, 2, 5, 10, 15, 30), (1, 2, 4, 8, 12, 24)
WAIT_BUCKETS = (*_SECONDS, *(60 * m for m in _MINUTES), *(3600 * h for h in _HOURS))
# The states of a ProvisioningRequest, as its conditions give them (`ProvisioningRequest.phase`).
REQUEST_STATES = ("Pending", ACCEPTED, PROVISIONED, *ENDED)


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
    waits: Sequence[Wait] = ()  # every gang waiting for admission


_UNITS = ((CPU, "milli_cpu"), (MEMORY, "memory_bytes"))


class QueueGauges(Collector):
    """Per-queue figures, computed at scrape time without touching any scheduling state."""

    def __init__(self, figures: Callable[[], QueueFigures]) -> None:
        self._figures = figures

    def collect(self) -> Iterable[Metric]:
        figures = self._figures()
        views, waiting = figures.views, figures.waiting
        families: dict[str, GaugeMetricFamily] = {}

        def gauge(name: str, text: str, labels: list[str], value: float) -> None:
            if name not in families:
                names = ["queue", "resource"][: len(labels)]
                families[name] = GaugeMetricFamily(f"lahar_{name}", text, labels=names)
            families[name].add_metric(labels, value)

        for view in views.values():
            name = view.name
            spec = view.queue.spec
            others = {*view.allocated, *view.deserved} - {CPU, MEMORY}
            for field, amounts, scalars in (
                ("allocated", view.allocated, others),
                ("deserved", view.deserved, others),
                ("capacity", spec.capability, _scalars(spec.capability)),
                ("guarantee", spec.guarantee.resource, _scalars(spec.guarantee.resource)),
            ):
                for resource, unit in _UNITS:
                    # (uncapped, or nothing guaranteed: no sample)
                    if field in ("allocated", "deserved") or resource in amounts:
                        text = f"Queue {field}: {resource}"
                        gauge(f"queue_{field}_{unit}", text, [name], amounts[resource])
                text = f"Queue {field}: each resource but cpu and memory, in its own units"
                for resource in sorted(scalars):
                    metric = f"queue_{field}_scalar_resources"
                    gauge(metric, text, [name, resource], amounts[resource])
            gauge("queue_share", "Allocated / deserved (max over resources)", [name], view.share)
            gauge("queue_weight", "Queue weight", [name], spec.weight)
            gauge("queue_overused", "1 when allocated more than deserved", [name], view.overused)
            pending = waiting.get(name, 0)
            gauge("queue_pending_gangs", "Gangs waiting for admission", [name], pending)
        jobs = GaugeMetricFamily(
            "lahar_job_share",
            "DRF share of a gang: the largest fraction of the cluster it is allocated of any "
            "resource",
            labels=["namespace", "podgroup", "queue"],
        )
        for labels, value in sorted(figures.job_shares.items()):
            jobs.add_metric(list(labels), value)
        return [*families.values(), jobs, *_waiting(figures.waits)]


def _scalars(amounts: Resources) -> set[str]:
    return set(amounts) - {CPU, MEMORY}


def _waiting(waits: Iterable[Wait]) -> list[Metric]:
    """How many gangs wait, and the longest wait, by queue and cause (no sample where none
    waits)."""
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    oldest: dict[tuple[str, str], float] = {}
    for wait in waits:
        labels = (wait.queue, wait.cause)
        counts[labels] += 1
        oldest[labels] = max(oldest.get(labels, 0.0), wait.seconds)
    many = GaugeMetricFamily(
        "lahar_gangs_waiting",
        "Gangs waiting for admission, by queue and the cause of their latest rejection",
        labels=["queue", "cause"],
    )
    longest = GaugeMetricFamily(
        "lahar_gangs_waiting_oldest_seconds",
        "How long the oldest gang waiting for admission, by queue and cause, has waited: since "
        "its PodGroup was made, or, when it stood before, since this wait began",
        labels=["queue", "cause"],
    )
    for labels in sorted(counts):
        many.add_metric(list(labels), counts[labels])
        longest.add_metric(list(labels), oldest[labels])
    return [many, longest]


class RequestStates(Collector):
    """The ProvisioningRequests standing now by state: every state, 0 when none is in it.
    `read` gives the state of each (none until the server's provisioner sets it)."""

    def __init__(self) -> None:
        self.read: Callable[[], Iterable[str]] = lambda: ()

    def collect(self) -> Iterable[Metric]:
        counts = collections.Counter(self.read())
        family = GaugeMetricFamily(
            "lahar_provisioning_requests",
            "ProvisioningRequests of Lahar's standing now (one per gang waiting for nodes), by "
            "the state Cluster Autoscaler's conditions give them",
            labels=["state"],
        )
        for state in (*REQUEST_STATES, *sorted(counts.keys() - set(REQUEST_STATES))):
            family.add_metric([state], counts.get(state, 0))
        return [family]


class ExtenderMetrics:
    """The extender's registry: its calls, bindings, cache, gang rules, queues, whether this
    replica leads, and the run times of finished gangs it records."""

    def __init__(
        self,
        sizes: Callable[[], Mapping[str, int]],
        informers: Callable[[], Iterable[tuple[str, int, int]]] = lambda: (),
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.registry = CollectorRegistry()
        self.clock = clock  # the wall clock, which creationTimestamps are read against
        self.history = GangHistory()
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
        self.time_to_admission = Histogram(
            "lahar_gang_time_to_admission_seconds",
            "Time from a gang's PodGroup creation to its first admission (capacity reserved), by "
            "queue",
            ["queue"],
            buckets=WAIT_BUCKETS,
            registry=self.registry,
        )
        self.time_to_bound = Histogram(
            "lahar_gang_time_to_bound_seconds",
            "Time from a gang's PodGroup creation to the first binding of its minMember-th member, "
            "by queue",
            ["queue"],
            buckets=WAIT_BUCKETS,
            registry=self.registry,
        )
        self.barrier_wait = Histogram(
            "lahar_gang_barrier_wait_seconds",
            "Time a gang member's bind waited at the barrier",
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
        self.members_waiting = Gauge(
            "lahar_gang_members_held",
            "Bind calls of gang members waiting at the barrier now",
            registry=self.registry,
        )
        self.preemption_victims = Counter(
            "lahar_pod_preemption_victims",
            "Pods evicted for Lahar's preemptions (preempt: of the preemptor's queue) and "
            "reclaims (reclaim: of another queue), each once",
            ["reason"],
            registry=self.registry,
        )
        for reason in ("preempt", "reclaim"):
            self.preemption_victims.labels(reason)  # (both series from the start, at 0)
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
            "queue: the gang kept its reservation and the waiting members were placed again",
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
        self.provisioning_requests = RequestStates()
        self.registry.register(self.provisioning_requests)
        self.leader = leader_gauge(self.registry)
        self.leader_evictions = Counter(
            "lahar_leader_evictions",
            "Leading scheduler pods this standby evicted because their extender had not been "
            "ready for --take-over-after seconds",
            registry=self.registry,
        )
        self.run_times_recorded = Counter(
            "lahar_run_times_recorded",
            "Finished gangs' run times written to the ConfigMap lahar-system/lahar-run-times",
            registry=self.registry,
        )
        self.run_times_record_failures = Counter(
            "lahar_run_times_record_failures",
            "Writes of finished gangs' run times to the ConfigMap lahar-system/lahar-run-times "
            "that failed (their runs kept for the next write)",
            registry=self.registry,
        )

    def admitted(self, gang: GangView) -> None:
        """A gang was admitted: counted; its first admission timed from its creation."""
        self.gangs_admitted.inc()
        if self.history.first_admission(gang):
            self._since_made(self.time_to_admission, gang.group)

    def stood(self, gang: GangView) -> None:
        """A gang's minMember-th member was bound: its first stand timed from its creation."""
        if self.history.first_stand(gang):
            self._since_made(self.time_to_bound, gang.group)

    def count_victims(self, preemptor: Preemptor) -> None:
        """Count the victims the preemptor reports (`Preemptor.on_evicted`), by reason."""
        victims = self.preemption_victims
        preemptor.on_evicted = lambda reason, pods: victims.labels(reason).inc(pods)

    def _since_made(self, histogram: Histogram, group: PodGroup | None) -> None:
        """Observe the time since the group was made (nothing when the group is gone or says no
        creationTimestamp)."""
        seconds = since_made(group, self.clock()) if group is not None else None
        if group is not None and seconds is not None:
            histogram.labels(group.queue).observe(seconds)
