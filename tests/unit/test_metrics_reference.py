"""Every metric the extender, the controller and the webhook register is in the metrics
reference, docs/operations.md (the queue gauges, made from live figures, are checked by the e2e
twin of this test)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from extender.controller.metrics import ControllerMetrics
from extender.controller.store import JobStore
from extender.controller.workqueue import WorkQueue
from extender.server.metrics import ExtenderMetrics
from extender.webhook.metrics import WebhookMetrics
from tests.metrics_reference import documented, exposed_name


class _NoCertificate:
    serving = None


def _names(registry: CollectorRegistry) -> set[str]:
    return {exposed_name(family.name, family.type) for family in registry.collect()}


def test_every_registered_metric_is_documented() -> None:
    registries = [
        ExtenderMetrics(lambda: {"nodes": 1}, lambda: [("nodes", 0, 0)]).registry,
        ControllerMetrics(WorkQueue(), JobStore()).registry,
        WebhookMetrics(_NoCertificate()).registry,  # type: ignore[arg-type]
    ]
    exported = set().union(*(_names(registry) for registry in registries))
    assert len(exported) >= 20
    assert exported - documented() == set()


def test_the_table_names_only_metric_names() -> None:
    assert all(name.startswith("lahar_") and " " not in name for name in documented())
