"""Plain pods (no gang) that kube-scheduler could not place while Lahar's extender was down, or
answered as a standby, are placed soon after it serves again, with nothing else happening in the
cluster: no cluster event, and the periodic flush of parked pods is 5 minutes away.

An extender that cannot be reached is an error to the scheduler: it retries the pod after a
backoff (at most 10 s apart), extender or not. A refusal (a standby's, or a cache not synced yet:
failed nodes) parks the pod among the unschedulable ones (rejected by "Extender"), which no
queueing hint requeues: the extender wakes such pods when it comes to serve."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import child_processes
from extender.devcluster.lahar import wait_ready
from extender.kube import apply_object, condition, pod_when, wait_until
from tests.e2e.conftest import NodeFactory, PodFactory, extender_url, metric, restart_lahar

PROMPTLY = 20.0  # seconds: well below the scheduler's 5 minute flush of parked pods
IMPOSTOR = "no-scheduler-has-this-name"  # an identity no kube-scheduler takes the Lease with


def _not_scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's PodScheduled condition when the scheduler tried it and found no node."""
    found = condition(pod.get("status") or {}, "PodScheduled")
    return found if found.get("status") == "False" else None


def _filter_calls_settle(url: str, quiet: float) -> None:
    """Wait until the extender at `url` has answered a filter call and none for `quiet` seconds:
    the scheduler has parked what it refused (its first refusal's status write makes it try
    once more)."""
    seen, since = -1.0, time.monotonic()

    def settled() -> bool:
        nonlocal seen, since
        calls = metric(url, "lahar_extender_requests_total", verb="filter", result="ok")
        if calls != seen:
            seen, since = calls, time.monotonic()
        return seen > 0 and time.monotonic() - since >= quiet

    wait_until(settled, timeout=60, interval=0.2, what="the scheduler to stop retrying the pod")


def _bind_time(api: k8s.ApiClient, namespace: str, name: str) -> float:
    """Seconds from now until the pod is bound (at most a minute)."""
    started = time.monotonic()
    pod_when(api, namespace, name, "to be bound", lambda p: p["spec"].get("nodeName"))
    return time.monotonic() - started


@pytest.fixture
def lahar_down(dev_cluster: devcluster.DevCluster) -> Iterator[None]:
    """Lahar's extender killed for the test (started again after it, if it is still down)."""
    dev_cluster.stop_component("lahar", kill=True)
    yield
    record = next(p for p in dev_cluster.state.processes if p.name == "lahar")
    if not child_processes.is_running(record):
        restart_lahar(dev_cluster)


@pytest.mark.usefixtures("lahar_down")
def test_a_plain_pod_failed_while_the_extender_was_down_is_placed_once_it_serves(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    own_nodes(1, cpu="4")
    apply_object(api, pod("plain").cpu("1").build())
    failed = pod_when(api, namespace, "plain", "to fail scheduling", _not_scheduled)
    assert _not_scheduled(failed) is not None
    time.sleep(2)  # (the scheduler's own retries settle)

    restart_lahar(dev_cluster)
    took = _bind_time(api, namespace, "plain")
    print(f"bound {took:.2f}s after the extender served again")
    assert took < PROMPTLY, f"bound only {took:.1f}s after the extender served again"


@pytest.mark.usefixtures("lahar_down")
def test_a_plain_pod_a_standby_refused_is_placed_once_the_extender_serves(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    """An extender beside the scheduler answers as a standby (it takes another scheduler for its
    own): the scheduler parks the pod with the standby's refusal. The extender that serves
    replaces it and wakes the pod."""
    own_nodes(1, cpu="4")
    first = next(p for p in dev_cluster.state.processes if p.name == "lahar")
    log = Path(first.log).with_name("lahar-standby.log")
    standby, _ = child_processes.start(
        "lahar-standby",
        [*first.argv, f"--scheduler-identity={IMPOSTOR}"],
        log,
        die_with_parent=True,
    )
    try:
        wait_ready(standby, dev_cluster.state.ports["lahar"], timeout=60)
        apply_object(api, pod("plain").cpu("1").build())
        parked = pod_when(api, namespace, "plain", "to be refused by the standby", _not_scheduled)
        assert "standby" in str(_not_scheduled(parked))
        _filter_calls_settle(extender_url(dev_cluster, "/metrics"), quiet=5.0)
    finally:
        child_processes.stop(standby, timeout=10.0)

    restart_lahar(dev_cluster)
    took = _bind_time(api, namespace, "plain")
    print(f"bound {took:.2f}s after the extender served again")
    assert took < PROMPTLY, f"bound only {took:.1f}s after the extender served again"
