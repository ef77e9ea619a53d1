"""What the running extender, controller and webhook export on the dev cluster (queue gauges, job
shares and the batch metrics included, made from live figures) is all in the metrics reference,
docs/metrics.md, with the type and the labels it says. A gang that runs and one that cannot fit
give the batch metrics their series first: the times to admission and to bound, and a gang
waiting for want of capacity."""

from __future__ import annotations

import ssl
import urllib.request

from kubernetes import client as k8s
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from extender import devcluster
from extender.kube import wait_until
from tests.e2e.conftest import NodeFactory, PodFactory, extender_url, lahar_metric
from tests.e2e.gangs import submit_gang, wait_bound
from tests.metrics_reference import documented, exposed_name, mismatches

DEFAULT = {"queue": "default"}
WAITING = {"queue": "default", "cause": "NotEnoughResources"}


def _scraped(url: str, context: ssl.SSLContext | None) -> list[Metric]:
    with urllib.request.urlopen(url, timeout=5, context=context) as answer:
        text = answer.read().decode()
    return list(text_string_to_metric_families(text))


def test_every_exported_metric_is_documented(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    def seen(sample: str, labels: dict[str, str]) -> float:
        return lahar_metric(dev_cluster, sample, **labels)

    admitted = seen("lahar_gang_time_to_admission_seconds_count", DEFAULT)
    stood = seen("lahar_gang_time_to_bound_seconds_count", DEFAULT)
    own_nodes(1, cpu="4")
    runs = submit_gang(api, namespace, pod, "runs", 2, cpu="1")
    submit_gang(api, namespace, pod, "too-big", 2, cpu="4")
    wait_bound(api, namespace, runs, 2, "gang runs to be bound whole")
    wait_until(
        lambda: seen("lahar_gang_time_to_bound_seconds_count", DEFAULT) > stood,
        timeout=30,
        what="the time to bound of gang runs",
    )
    assert seen("lahar_gang_time_to_admission_seconds_count", DEFAULT) > admitted
    wait_until(
        lambda: seen("lahar_gangs_waiting", WAITING) >= 1,
        timeout=30,
        what="gang too-big counted waiting for want of capacity",
    )
    assert seen("lahar_gangs_waiting_oldest_seconds", WAITING) > 0

    ports = dev_cluster.state.ports
    unverified = ssl.create_default_context()
    unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE
    families = _scraped(extender_url(dev_cluster, "/metrics"), None)
    families += _scraped(f"http://127.0.0.1:{ports['lahar-controller']}/metrics", None)
    families += _scraped(f"https://127.0.0.1:{ports['lahar-webhook']}/metrics", unverified)
    exported = {exposed_name(f.name, f.type) for f in families}
    assert {"lahar_queue_weight", "lahar_jobs", "lahar_provisioning_requests"} <= exported
    assert mismatches(families) == []
    # (`*_created` series, a counter's creation time, are part of each counter, not metrics)
    lahar = {n for n in exported if n.startswith("lahar_") and not n.endswith("_created")}
    assert lahar - documented() == set()
