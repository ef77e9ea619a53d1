"""Two controllers, one Lease: the standby is ready (its cache synced, its Lease readable), as the
leader is, but neither leads (`lahar_leader` 0) nor reconciles; when the leader dies it takes over
within the lease time (`lahar_leader` 1) and runs the jobs submitted meanwhile."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import child_processes
from extender.devcluster.lahar import controller_argv
from extender.devcluster.ports import free_ports
from extender.kube import read, wait_until
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, NodeFactory, controller_leads
from tests.e2e.jobs import CONTROLLER, restart_controller, running, status, submit

LEASE_SECONDS = 15  # LeaseOptions.lease_seconds


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def test_standby_takes_over_when_the_leader_dies(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    tmp_path: Path,
) -> None:
    own_nodes(1, cpu="4")
    (port,) = free_ports(1)
    kubeconfig = dev_cluster.state.state_dir / "lahar-controller.kubeconfig"
    standby, child = child_processes.start(
        "lahar-controller-standby",
        controller_argv(kubeconfig, port),
        tmp_path / "standby.log",
        die_with_parent=True,
    )
    try:
        wait_until(
            lambda: "waiting to lead" in (tmp_path / "standby.log").read_text(),
            timeout=30,
            what="the standby to wait for the Lease",
        )
        wait_until(lambda: _ready(port), timeout=60, what="the standby to be ready")
        time.sleep(1)  # a moment in which a standby that wrongly took the Lease would say so
        assert not controller_leads(port), "a standby must not lead"
        assert _ready(port), "a standby whose cache is synced and whose Lease works is ready"
        lease = read(api, "coordination.k8s.io/v1", "Lease", "lahar-controller", "lahar-system")
        assert lease is not None and lease["spec"]["holderIdentity"]

        dev_cluster.stop_component(CONTROLLER, kill=True)
        died = time.monotonic()
        submit(
            api, make_job("late").ns(namespace).task("main", 2).pinned(TEST_KEY, namespace).build()
        )
        wait_until(
            lambda: controller_leads(port), timeout=LEASE_SECONDS + 15, what="the standby to lead"
        )
        assert _ready(port)
        took = time.monotonic() - died
        assert took <= LEASE_SECONDS + 5, f"takeover took {took:.1f}s"
        running(api, namespace, "late", 2)
        assert (status(api, namespace, "late").get("state") or {}).get("phase") in (
            "Pending",
            "Running",
        )
    finally:
        child_processes.stop(standby, timeout=0.0)
        child.poll()
        restart_controller(dev_cluster)  # leads again once the standby's Lease expires
