"""`lahar hypernodes build --apply` on a real API server: the HyperNodes the nodes' labels
describe are created; after a node moves to another rack, a second run moves it, deletes the rack
left empty, and leaves a HyperNode it did not make alone; `list` shows the tree.

The nodes are fake, tainted NoSchedule (the shared cluster's other tests place no pod on them) and
labelled with keys of this test's own, so no other node takes part."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.topology import API_VERSION, KIND
from extender.api.topology_labels import SOURCE, SOURCE_LABEL
from extender.cli.main import main
from extender.devcluster import fake_node
from extender.kube import apply_object, delete, list_objects, load_manifests, wait_established
from tests.builders import make_hyper_node

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "crds" / "crd-topology.yaml"
HAND_MADE = "hand-made"
KEEP_OFF = {"key": "lahar.io/hypernodes-test", "value": "true", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def topology_crd(api: k8s.ApiClient) -> str:
    if not CRD_FILE.exists():
        pytest.skip(f"{CRD_FILE.relative_to(ROOT)} is not in this checkout: no HyperNode kind")
    (crd,) = load_manifests(CRD_FILE)
    apply_object(api, crd.body, source=crd.source)
    wait_established(api, [crd.name], timeout=30)
    return crd.name


@pytest.fixture
def labels() -> tuple[str, str]:
    """A rack and a spine label key only this test's nodes carry."""
    tag = secrets.token_hex(3)
    return f"test.lahar.io/rack-{tag}", f"test.lahar.io/spine-{tag}"


@pytest.fixture
def nodes(api: k8s.ApiClient, topology_crd: str) -> Iterator[list[str]]:
    """Three node names (the nodes are made by the test), removed afterwards with every
    HyperNode built from labels."""
    tag = secrets.token_hex(3)
    names = [f"hn-{tag}-{i}" for i in range(3)]
    yield names
    for name in names:
        delete(api, "v1", "Node", name)
    for hyper_node in list_objects(
        api, API_VERSION, KIND, label_selector=f"{SOURCE_LABEL}={SOURCE}"
    ):
        delete(api, API_VERSION, KIND, hyper_node["metadata"]["name"])
    delete(api, API_VERSION, KIND, HAND_MADE)


def place(api: k8s.ApiClient, name: str, labels: tuple[str, str], rack: str, spine: str) -> None:
    rack_label, spine_label = labels
    node = fake_node(
        name, cpu="4", labels={rack_label: rack, spine_label: spine}, taints=[KEEP_OFF]
    )
    apply_object(api, node)


def tree(api: k8s.ApiClient) -> dict[str, tuple[int, list[str]]]:
    """Every HyperNode built from labels: name -> (tier, member names)."""
    found = list_objects(api, API_VERSION, KIND, label_selector=f"{SOURCE_LABEL}={SOURCE}")
    return {
        h["metadata"]["name"]: (
            h["spec"]["tier"],
            [m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]],
        )
        for h in found
    }


def build(kubeconfig: Path, labels: tuple[str, str], *more: str) -> int:
    flags = ["--label", labels[0], "--label", labels[1], "--kubeconfig", str(kubeconfig)]
    return main(["hypernodes", "build", "--apply", *flags, *more])


def test_build_apply_follows_the_labels(
    api: k8s.ApiClient,
    kubeconfig: Path,
    labels: tuple[str, str],
    nodes: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    n0, n1, n2 = nodes
    for name, rack in ((n0, "r0"), (n1, "r0"), (n2, "r1")):
        place(api, name, labels, rack, "p0")
    theirs: dict[str, Any] = make_hyper_node(HAND_MADE).nodes(n0).build()
    apply_object(api, theirs)

    assert build(kubeconfig, labels) == 0

    assert tree(api) == {
        "t1-r0": (1, [n0, n1]),
        "t1-r1": (1, [n2]),
        "t2-p0": (2, ["t1-r0", "t1-r1"]),
    }
    assert "hypernode t2-p0 created" in capsys.readouterr().out

    place(api, n2, labels, "r0", "p0")
    assert build(kubeconfig, labels) == 0

    assert tree(api) == {"t1-r0": (1, [n0, n1, n2]), "t2-p0": (2, ["t1-r0"])}
    printed = capsys.readouterr().out
    assert "hypernode t1-r0 configured" in printed
    assert "hypernode t1-r1 deleted" in printed
    assert HAND_MADE in [h["metadata"]["name"] for h in list_objects(api, API_VERSION, KIND)]

    assert main(["hypernodes", "list", "--kubeconfig", str(kubeconfig)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert ["t2-p0", "2", "3", "12", "12"] in [line.split() for line in listed]
    assert ["t1-r0", "1", "3", "12", "12"] in [line.split() for line in listed]
