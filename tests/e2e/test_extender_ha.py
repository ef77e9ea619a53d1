"""Two replicas of Lahar's scheduler pod, each a kube-scheduler with its extender beside it: the
extender whose scheduler holds the scheduler's Lease serves; the other keeps a warm cache, is
ready as its scheduler is, and answers nothing. When the leading pod dies, the other scheduler
takes the Lease and its extender takes over: a gang submitted meanwhile is placed whole.

The second replica is made as a pod would be (`devcluster.replica`)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import child_processes, health
from extender.devcluster.replica import SchedulerReplica, start_replica
from extender.kube import read, wait_until
from tests.e2e.conftest import NodeFactory, PodFactory
from tests.e2e.gangs import bound, submit_gang, wait_bound

LEASE = ("coordination.k8s.io/v1", "Lease", "lahar-scheduler", "lahar-system")
LEASE_SECONDS = 15  # kube-scheduler's default leaseDuration
HOSTNAME = "lahar-scheduler-b"


def _ready(port: int) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return answer.status == 200, answer.read().decode()
    except urllib.error.HTTPError as error:
        return False, error.read().decode()
    except (urllib.error.URLError, OSError) as error:
        return False, str(error)


def _standby_refusal(port: int, nodes: list[str]) -> str:
    """What the extender answers a filter call with, when it refuses as a standby ("" else)."""
    pod = {"metadata": {"name": "probe", "namespace": "default", "uid": "probe"}, "spec": {}}
    body = json.dumps({"Pod": pod, "NodeNames": nodes}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/filter", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        reply = json.loads(answer.read())
    reasons = [reply.get("Error") or "", *(reply.get("FailedNodes") or {}).values()]
    return " ".join(r for r in reasons if "standby" in r)


def _holder(api: k8s.ApiClient) -> str:
    lease = read(api, *LEASE) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


@dataclass
class Replica:
    pod: SchedulerReplica
    nodes: list[str]  # the test's own nodes

    @property
    def port(self) -> int:
        return self.pod.port


@pytest.fixture
def second_replica(dev_cluster: devcluster.DevCluster, own_nodes: NodeFactory) -> Iterator[Replica]:
    """Another scheduler pod: kube-scheduler as host `lahar-scheduler-b`, its extender beside it
    (and a node of the test's own)."""
    nodes = own_nodes(1, cpu="4")
    replica = start_replica(dev_cluster, HOSTNAME)
    try:
        yield Replica(replica, nodes)
    finally:
        replica.stop()


def test_the_extender_beside_the_scheduler_that_takes_the_lease_takes_over(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    pod: PodFactory,
    second_replica: Replica,
) -> None:
    b = second_replica
    nodes = b.nodes
    wait_until(lambda: _ready(b.port)[0], timeout=60, what="the second extender's cache")
    assert not _holder(api).startswith(HOSTNAME)  # the first replica leads
    assert "the kube-scheduler beside it does not hold the Lease" in _standby_refusal(b.port, nodes)

    # The leading pod dies at once (no Lease released): the other scheduler waits it out.
    dev_cluster.stop_component("lahar-scheduler", kill=True)
    dev_cluster.stop_component("lahar", kill=True)
    killed = time.monotonic()
    names = submit_gang(api, namespace, pod, "during", 2, cpu="1")
    wait_until(
        lambda: _holder(api).startswith(f"{HOSTNAME}_"),
        timeout=LEASE_SECONDS + 30,
        what="the second scheduler to take the Lease",
    )
    wait_bound(api, namespace, names, 2, "the gang placed whole by the second replica")
    took = time.monotonic() - killed
    assert took <= LEASE_SECONDS + 20, f"placed {took:.1f}s after the first replica died"
    assert _standby_refusal(b.port, nodes) == ""

    # The first replica comes back as a standby, and leads again once the second goes.
    first = dev_cluster.state
    dev_cluster.start_component("lahar", die_with_parent=True)
    scheduler = dev_cluster.start_component("lahar-scheduler", die_with_parent=True)
    health.wait_healthy(
        scheduler, f"https://127.0.0.1:{first.ports['lahar-scheduler']}/healthz", timeout=60
    )
    wait_until(lambda: _ready(first.ports["lahar"])[0], timeout=60, what="the first extender")
    child_processes.stop(b.pod.scheduler, timeout=15.0)  # a graceful stop releases the Lease
    wait_until(
        lambda: _holder(api) and not _holder(api).startswith(HOSTNAME),
        timeout=LEASE_SECONDS + 30,
        what="the first scheduler to lead again",
    )
    wait_until(
        lambda: not child_processes.is_running(b.pod.extender),
        timeout=30,
        what="the second extender to stop once another scheduler leads",
    )
    log = Path(b.pod.extender.log).read_text()
    # It saw the Lease released, or (had it looked only after) go to the first scheduler.
    assert "released the Lease" in log or "went to" in log
    assert "stopping" in log
    again = submit_gang(api, namespace, pod, "after", 2, cpu="1")
    wait_bound(api, namespace, again, 2, "a gang placed whole by the first replica again")
    assert sorted(bound(api, namespace, names + again)) == sorted(names + again)


def test_the_loopback_extender_cannot_be_reached_from_outside_its_pod(
    dev_cluster: devcluster.DevCluster,
) -> None:
    """The verbs listen on 127.0.0.1 only: on any other address of the machine (a pod's IP) the
    port is not bound. The probes' port is."""
    ports = dev_cluster.state.ports
    addresses = subprocess.run(
        ["hostname", "-I"], capture_output=True, text=True, check=True
    ).stdout.split()
    outside = [a for a in addresses if not a.startswith("127.") and ":" not in a]
    if not outside:
        outside = ["127.0.0.2"]  # (loopback's other addresses: not the one bound either)
    for address in outside:
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(f"http://{address}:{ports['lahar']}/readyz", timeout=3)
        with urllib.request.urlopen(
            f"http://{address}:{ports['lahar-probes']}/readyz", timeout=3
        ) as answer:
            assert answer.status == 200
    assert _ready(ports["lahar"])[0]
