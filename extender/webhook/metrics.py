"""Prometheus metrics of the admission webhook, in a registry of its own.

- `lahar_webhook_admissions_total{resource,operation,result}`: reviews answered; result is
  allowed, patched, denied, error (a rule raised) or bad_request (not a review);
- `lahar_webhook_admission_seconds{resource}`: time to answer one review;
- `lahar_webhook_certificate_expiry_timestamp_seconds`: when the serving certificate ends, read at
  scrape time (0 before one is served).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from extender.webhook.tls import ServingCertificate


class WebhookMetrics:
    """The webhook's registry: reviews by outcome, their time, the certificate's end."""

    def __init__(self, tls: ServingCertificate) -> None:
        self.registry = CollectorRegistry()
        self.admissions = Counter(
            "lahar_webhook_admissions",
            "Admission reviews answered, by resource, operation and result "
            "(allowed, patched, denied, error; bad_request for what was not a review)",
            ["resource", "operation", "result"],
            registry=self.registry,
        )
        self.seconds = Histogram(
            "lahar_webhook_admission_seconds",
            "Time to answer one admission review, by resource",
            ["resource"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=self.registry,
        )
        expiry = Gauge(
            "lahar_webhook_certificate_expiry_timestamp_seconds",
            "When the serving certificate ends (Unix time)",
            registry=self.registry,
        )
        expiry.set_function(lambda: tls.serving.expires.timestamp() if tls.serving else 0.0)
