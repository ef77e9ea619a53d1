"""Two extenders, one Lease: the standby keeps a warm cache but is not ready and refuses the
verbs; when the leader dies it takes over within the lease time. Gangs submitted while no
extender served are placed whole once one does."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request

from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import process
from extender.devcluster.ports import free_ports
from extender.kube import read, wait_until
from tests.e2e.conftest import (
    NodeFactory,
    PodFactory,
    extender_tls,
    restart_lahar,
)
from tests.e2e.gangs import bound, submit_gang, wait_bound

LEASE_SECONDS = 15  # LeaseOptions.lease_seconds
EXTENDER = "lahar"


def _ready(port: int, context: ssl.SSLContext) -> tuple[bool, str]:
    try:
        url = f"https://127.0.0.1:{port}/readyz"
        with urllib.request.urlopen(url, timeout=2, context=context) as answer:
            return answer.status == 200, answer.read().decode()
    except urllib.error.HTTPError as error:
        return False, error.read().decode()
    except (urllib.error.URLError, OSError) as error:
        return False, str(error)


def _filter_error(port: int, context: ssl.SSLContext, nodes: list[str]) -> str:
    """Why the extender refused the nodes ("" when it judged them)."""
    pod = {"metadata": {"name": "probe", "namespace": "default", "uid": "probe"}, "spec": {}}
    body = json.dumps({"Pod": pod, "NodeNames": nodes}).encode()
    request = urllib.request.Request(f"https://127.0.0.1:{port}/filter", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=10, context=context) as answer:
        reply = json.loads(answer.read())
    reasons = [reply.get("Error") or "", *(reply.get("FailedNodes") or {}).values()]
    return " ".join(r for r in reasons if "standby" in r or "not synced" in r)


def test_a_standby_extender_takes_over_when_the_leader_dies(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    nodes = own_nodes(1, cpu="4")
    log = dev_cluster.state.state_dir / "logs" / "lahar-standby.log"
    (port,) = free_ports(1)
    leader_argv = next(p for p in dev_cluster.state.processes if p.name == EXTENDER).argv
    argv = [a if not a.startswith("--port=") else f"--port={port}" for a in leader_argv]
    standby, child = process.start("lahar-standby", argv, log, die_with_parent=True)
    context = extender_tls(dev_cluster)
    try:
        wait_until(
            lambda: "standby" in _ready(port, context)[1],
            timeout=30,
            what="the standby extender to answer /readyz as a standby",
        )
        assert "standby" in _filter_error(port, context, nodes)
        lease = read(api, "coordination.k8s.io/v1", "Lease", "lahar-extender", "lahar-system")
        assert lease is not None and lease["spec"]["holderIdentity"]

        dev_cluster.stop_component(EXTENDER, kill=True)
        killed = time.monotonic()
        # Submitted while no extender serves: the scheduler's calls fail, nothing is bound.
        names = submit_gang(api, namespace, pod, "during", 2, cpu="1")
        wait_until(
            lambda: _ready(port, context)[0],
            timeout=LEASE_SECONDS + 30,
            what="the standby to take over",
        )
        took = time.monotonic() - killed
        assert took <= LEASE_SECONDS + 10, f"took over after {took:.1f}s"
        assert _filter_error(port, context, nodes) == ""
        assert bound(api, namespace, names) == []  # the scheduler still calls the dead port
    finally:
        process.stop(standby, timeout=10.0)
        child.poll()
        if not process.is_running(
            next(p for p in dev_cluster.state.processes if p.name == EXTENDER)
        ):
            restart_lahar(dev_cluster)  # leads once the standby's Lease runs out
    wait_bound(api, namespace, names, 2, "the gang placed whole by the restarted leader")
