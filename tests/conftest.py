"""Shared fixtures: one real dev cluster per test session, a fresh namespace per test.

The cluster runs the whole control plane plus Lahar (its extender and a second stock kube-scheduler
with Lahar's profiles, as in `policy/`). It starts only when a test asks for it (unit tests never
do), runs with the parent-death
signal so an interrupted or killed pytest leaves no process behind, and is stopped in teardown
whether tests passed or not. Each test gets its own namespace, deleted afterwards (the real
namespace controller finishes the deletion in the background).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.kube import apply_object, connect, delete, read, wait_until

AUTOSCALER_CRD = Path(__file__).parent / "autoscaler" / "provisioningrequests.yaml"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests under tests/integration and tests/e2e run on the shared real dev cluster."""
    for item in items:
        if {"integration", "e2e"} & set(item.path.parts):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def dev_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devcluster.DevCluster]:
    version = devcluster.chosen_kubernetes()
    binaries = devcluster.ensure_binaries(quiet=True, kubernetes=version)
    options = devcluster.ClusterOptions(
        state_dir=tmp_path_factory.mktemp("dev-cluster"),
        die_with_parent=True,
        with_lahar=True,
        kubernetes=version,
        # Cluster Autoscaler's ProvisioningRequest, served as when it runs (tests.autoscaler)
        extra_crds=(AUTOSCALER_CRD,),
    )
    cluster = devcluster.up(options, binaries)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def kubeconfig(dev_cluster: devcluster.DevCluster) -> Path:
    return dev_cluster.kubeconfig


@pytest.fixture(scope="session")
def api(kubeconfig: Path) -> Iterator[k8s.ApiClient]:
    with connect(kubeconfig) as client:
        yield client


@pytest.fixture
def namespace(api: k8s.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A new namespace whose default ServiceAccount exists (so pods can be created in it)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].rstrip("-")
    name = f"{stem}-{secrets.token_hex(3)}"
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", name),
        timeout=60,
        what=f"the default ServiceAccount in namespace {name}",
    )
    yield name
    delete(api, "v1", "Namespace", name)
