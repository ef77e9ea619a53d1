"""`lahar controller --hypernode-labels` on the dev cluster: the HyperNodes the nodes' labels
describe appear, and follow within seconds when a node moves to another rack or goes.

The dev cluster's controller runs as the manifests ship it, without the flag; this test starts a
second one with it, as the controller's own ServiceAccount (so the RBAC of
manifests/base/controller-rbac.yaml is what allows it), without leader election (it leads at once)
and serving a scheduler name no pod uses. The nodes are fake, tainted NoSchedule and labelled with
keys of this test's own, so no other node takes part."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.topology import API_VERSION, KIND
from extender.api.topology_labels import SOURCE, SOURCE_LABEL
from extender.devcluster import child_processes, fake_node
from extender.devcluster.lahar import controller_argv
from extender.devcluster.ports import free_ports
from extender.kube import apply_object, delete, list_objects, wait_until

KEEP_OFF = {"key": "lahar.io/hypernode-sync-test", "value": "true", "effect": "NoSchedule"}
FOLLOWS = 10.0  # seconds within which the HyperNodes follow a change (debounce, sync, watch)
Tree = dict[str, list[str]]


def tree(api: k8s.ApiClient) -> Tree:
    """Every HyperNode built from labels: name -> member names."""
    found = list_objects(api, API_VERSION, KIND, label_selector=f"{SOURCE_LABEL}={SOURCE}")
    return {
        h["metadata"]["name"]: [m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]]
        for h in found
    }


def settles(api: k8s.ApiClient, want: Tree, timeout: float) -> float:
    """Wait until the HyperNodes are `want`; the seconds it took."""
    start = time.monotonic()
    wait_until(
        lambda: tree(api) == want,
        timeout=timeout,
        what=f"the HyperNodes to be {want}",
        describe=lambda: str(tree(api)),
    )
    return time.monotonic() - start


@pytest.fixture
def racks() -> tuple[str, str]:
    """A rack and a spine label key only this test's nodes carry."""
    tag = secrets.token_hex(3)
    return f"test.lahar.io/rack-{tag}", f"test.lahar.io/spine-{tag}"


@pytest.fixture
def nodes(api: k8s.ApiClient) -> Iterator[list[str]]:
    """Three node names, the nodes removed afterwards with every HyperNode built from labels."""
    tag = secrets.token_hex(3)
    names = [f"hs-{tag}-{i}" for i in range(3)]
    yield names
    for name in names:
        delete(api, "v1", "Node", name)
    for name in tree(api):
        delete(api, API_VERSION, KIND, name)


def place(api: k8s.ApiClient, name: str, racks: tuple[str, str], rack: str) -> None:
    rack_label, spine_label = racks
    labels = {rack_label: rack, spine_label: "p0"}
    apply_object(api, fake_node(name, cpu="4", labels=labels, taints=[KEEP_OFF]))


def test_the_controller_keeps_the_hyper_nodes_in_step_with_the_labels(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    racks: tuple[str, str],
    nodes: list[str],
    tmp_path: Path,
) -> None:
    n0, n1, n2 = nodes
    for name, rack in ((n0, "r0"), (n1, "r0"), (n2, "r1")):
        place(api, name, racks, rack)
    (port,) = free_ports(1)
    kubeconfig = dev_cluster.state.state_dir / "lahar-controller.kubeconfig"
    argv = [
        *controller_argv(kubeconfig, port),
        "--no-leader-elect",
        "--served-scheduler=lahar-hypernode-sync-test",
        f"--hypernode-labels={racks[0]},{racks[1]}",
        "--hypernode-tier-names=rack,spine",
    ]
    log = tmp_path / "controller.log"
    record, child = child_processes.start(
        "lahar-controller-hypernodes", argv, log, die_with_parent=True
    )
    try:
        settles(api, {"t1-r0": [n0, n1], "t1-r1": [n2], "t2-p0": ["t1-r0", "t1-r1"]}, 60)

        place(api, n2, racks, "r0")
        took = settles(api, {"t1-r0": [n0, n1, n2], "t2-p0": ["t1-r0"]}, FOLLOWS)
        assert took < FOLLOWS

        delete(api, "v1", "Node", n0)
        settles(api, {"t1-r0": [n1, n2], "t2-p0": ["t1-r0"]}, FOLLOWS)

        said = log.read_text()
        assert "hypernode t1-r1 deleted: no node's labels describe it any more" in said
        assert " ERROR " not in said and "forbidden" not in said.lower()
    finally:
        child_processes.stop(record, timeout=10.0)
        child.poll()
