"""What the running extender, controller and webhook export on the dev cluster (queue gauges and
job shares included, made from live figures) is all in the metrics reference, docs/operations.md."""

from __future__ import annotations

import ssl
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from extender import devcluster
from tests.e2e.conftest import extender_url
from tests.metrics_reference import documented, exposed_name


def _scraped(url: str, context: ssl.SSLContext | None) -> set[str]:
    with urllib.request.urlopen(url, timeout=5, context=context) as answer:
        text = answer.read().decode()
    return {exposed_name(f.name, f.type) for f in text_string_to_metric_families(text)}


def test_every_exported_metric_is_documented(dev_cluster: devcluster.DevCluster) -> None:
    ports = dev_cluster.state.ports
    unverified = ssl.create_default_context()
    unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE
    exported = _scraped(extender_url(dev_cluster, "/metrics"), None)
    assert "lahar_queue_weight" in exported  # the default queue's gauges are there
    exported |= _scraped(f"http://127.0.0.1:{ports['lahar-controller']}/metrics", None)
    exported |= _scraped(f"https://127.0.0.1:{ports['lahar-webhook']}/metrics", unverified)
    # `*_created` series (a counter's creation time) are part of each counter, not metrics.
    lahar = {n for n in exported if n.startswith("lahar_") and not n.endswith("_created")}
    assert lahar - documented() == set()
