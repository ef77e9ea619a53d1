"""Every metric the extender, the controller and the webhook register is in the metrics reference,
docs/metrics.md, with the type and the labels it says: the registries are filled with one sample
of each labelled series (the queue gauges from figures made here; the e2e twin of this test reads
what the running components export), and a family with no sample, whose labels nothing would
check, fails the test."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from extender.api.resources import Resources
from extender.api.scheduling import GroupKind
from extender.api.times import rfc3339
from extender.controller.metrics import ControllerMetrics
from extender.controller.store import JobStore
from extender.controller.workqueue import WorkQueue
from extender.framework.engine import GangView, QueueView
from extender.server.gang_waits import Wait
from extender.server.metrics import ExtenderMetrics, QueueFigures, QueueGauges
from extender.webhook.metrics import WebhookMetrics
from tests.batch_builders import make_job
from tests.builders import make_group, make_pod, make_queue
from tests.metrics_reference import documented, exposed_name, mismatches, reference


class _NoCertificate:
    serving = None


def _extender() -> CollectorRegistry:
    """The extender's registry with a sample in each series, as the app wires it."""
    metrics = ExtenderMetrics(lambda: {"nodes": 1}, lambda: [("nodes", 0, 0)], clock=lambda: 9e8)
    group = make_group("g").queue("ml").set("metadata.creationTimestamp", rfc3339(9e8 - 60))
    model = group.model(GroupKind.COSCHEDULING)
    pod = make_pod("g-0").uid("g-0").group("g").model()
    metrics.admitted(GangView(model.key, model, [], [], [pod]))
    metrics.stood(GangView(model.key, model, [pod], [], []))
    metrics.gang_rejections.labels("Queued").inc()
    metrics.requests.labels("filter", "ok").inc()
    metrics.latency.labels("filter").observe(0.001)
    metrics.binds.labels("bound").inc()
    metrics.provisioning_requests.read = lambda: ["Accepted"]
    metrics.leader.labels("extender", "lahar-system/lahar-scheduler").set(1)
    queue = (
        make_queue("ml")
        .capability(cpu="8", memory="16Gi", gpu="2")
        .guarantee(cpu="2", memory="4Gi", gpu="1")
        .model()
    )
    amounts = Resources({"cpu": 1000, "memory": 2**30, "gpu": 1})
    view = QueueView(queue, allocated=amounts, deserved=amounts)
    figures = QueueFigures(
        {"ml": view},
        {"ml": 1},
        {("default", "g", "ml"): 0.5},
        [Wait("ml", "NotEnoughResources", 30.0)],
    )
    metrics.registry.register(QueueGauges(lambda: figures))
    return metrics.registry


def _controller() -> CollectorRegistry:
    store = JobStore()
    store.upsert_job(make_job("a").status(phase="Running").model())
    metrics = ControllerMetrics(WorkQueue(), store)
    metrics.reconciles.labels("done").inc()
    metrics.leader.labels("controller", "lahar-system/lahar-controller").set(1)
    return metrics.registry


def _webhook() -> CollectorRegistry:
    metrics = WebhookMetrics(_NoCertificate())  # type: ignore[arg-type]
    metrics.admissions.labels("jobs", "CREATE", "allowed").inc()
    metrics.seconds.labels("jobs").observe(0.001)
    return metrics.registry


def test_every_registered_metric_is_documented_with_its_type_and_labels() -> None:
    families = [
        f for registry in (_extender(), _controller(), _webhook()) for f in registry.collect()
    ]
    exported = {exposed_name(family.name, family.type) for family in families}
    assert [family.name for family in families if not family.samples] == []
    assert mismatches(families) == []
    assert documented() - exported == set()  # and the table names nothing they do not export


@pytest.mark.parametrize(
    ("kind", "name", "labels", "said"),
    [
        (
            Counter,
            "lahar_not_in_the_table",
            ["x"],
            "lahar_not_in_the_table_total: not in the table",
        ),
        (Gauge, "lahar_binds", ["result"], "lahar_binds: not in the table"),  # lahar_binds_total
        (
            Histogram,
            "lahar_pending_gangs",
            [],
            "lahar_pending_gangs: a histogram, the table says gauge",
        ),
        (
            Counter,
            "lahar_binds",
            ["verb"],
            "lahar_binds_total: labels ['verb'], the table says ['result']",
        ),
        (
            Gauge,
            "lahar_jobs",
            ["queue"],
            "lahar_jobs: labels ['queue'], the table says ['phase', 'queue']",
        ),
    ],
)
def test_a_metric_missing_from_the_table_or_described_otherwise_is_named(
    kind: type[Counter | Gauge | Histogram], name: str, labels: list[str], said: str
) -> None:
    registry = CollectorRegistry()
    metric = kind(name, "", labels, registry=registry)
    if labels:
        metric = metric.labels(*("x" for _ in labels))
    if isinstance(metric, Histogram):
        metric.observe(1)
    else:
        metric.inc()
    assert mismatches(registry.collect()) == [said]


def test_the_table_names_only_metric_names() -> None:
    assert all(name.startswith("lahar_") and " " not in name for name in documented())
    assert set(row.type for row in reference().values()) == {"counter", "gauge", "histogram"}
