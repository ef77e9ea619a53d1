"""A snapshot's reads on a real kube-apiserver: every kind it lists, one object of each made
(finished pods left out by the server), a kind the server does not serve empty and named absent;
a ServiceAccount bound to nothing is refused in one line naming `list` and the resource, and
bound to the ClusterRole of manifests/whatif/rbac.yaml, applied as the file is, lists them all.
The Role of that file, in the namespace of a Deployment shipped as manifests/scheduler.yaml (no
replicas), is what reading the policy in force takes."""

from __future__ import annotations

import copy
import dataclasses
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster.cluster import native_gangs
from extender.devcluster.lifecycle import end_pod
from extender.kube import apply_object, connect, delete, load_manifests, wait_until
from extender.kube.policy_source import PolicyNotFound, policy_in_force
from extender.kube.snapshot_lists import (
    HYPER_NODES,
    NODES,
    SNAPSHOT_KINDS,
    MissingRight,
    RawCluster,
    list_for_snapshot,
)
from extender.kube.tokens import service_account_token
from tests.builders import make_group, make_hyper_node, make_job, make_pod, make_queue
from tests.integration.helpers import phase, pod_when

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "manifests" / "whatif" / "rbac.yaml"
RBAC_API = "rbac.authorization.k8s.io/v1"
PAUSE = {"name": "main", "image": "registry.k8s.io/pause:3.10"}

MakeObject = Callable[[dict[str, Any]], str]


@pytest.fixture
def cluster_object(api: k8s.ApiClient) -> Iterator[MakeObject]:
    """`cluster_object(body)`: apply a cluster-scoped object for this test, deleted after it;
    its name."""
    made: list[tuple[str, str, str]] = []

    def make(body: dict[str, Any]) -> str:
        apply_object(api, body)
        made.append((body["apiVersion"], body["kind"], body["metadata"]["name"]))
        return str(body["metadata"]["name"])

    yield make
    for api_version, kind, name in reversed(made):
        delete(api, api_version, kind, name)


def _names(items: list[dict[str, Any]], namespace: str = "") -> set[str]:
    """The names of the items in `namespace` ("" for cluster-scoped ones)."""
    return {i["metadata"]["name"] for i in items if i["metadata"].get("namespace", "") == namespace}


def test_each_kind_is_listed_and_finished_pods_are_not(
    api: k8s.ApiClient,
    namespace: str,
    dev_cluster: devcluster.DevCluster,
    cluster_object: MakeObject,
) -> None:
    tag = secrets.token_hex(3)
    apply_object(api, make_pod("running").ns(namespace).cpu("100m").build())
    apply_object(api, make_pod("finished").ns(namespace).cpu("100m").build())
    for name in ("running", "finished"):
        pod_when(api, namespace, name, "to run", lambda p: phase(p) == "Running")
    end_pod(api, namespace, "finished", 0)
    pod_when(api, namespace, "finished", "to succeed", lambda p: phase(p) == "Succeeded")
    priority_class = cluster_object(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"snapshot-{tag}"},
            "value": 10,
        }
    )
    queue = cluster_object(make_queue(f"snapshot-{tag}").build())
    hyper_node = cluster_object(make_hyper_node(f"snapshot-{tag}").nodes("absent-node").build())
    apply_object(api, make_group("volcano").ns(namespace).build())
    apply_object(
        api,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "coscheduling", "namespace": namespace},
            "spec": {"minMember": 1},
        },
    )
    native = native_gangs(dev_cluster.state.kubernetes_version)
    if native:
        apply_object(
            api,
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "native", "namespace": namespace},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
            },
        )
    apply_object(api, make_job("volcano").ns(namespace).task("w", 1, cpu="100m").build())
    apply_object(
        api,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", "namespace": namespace},
            "spec": {
                "suspend": True,
                "template": {"spec": {"restartPolicy": "Never", "containers": [PAUSE]}},
            },
        },
    )

    raw = list_for_snapshot(api)

    assert _names(raw.pods, namespace) & {"running", "finished"} == {"running"}
    (running,) = (
        p
        for p in raw.pods
        if (p["metadata"]["namespace"], p["metadata"]["name"]) == (namespace, "running")
    )
    assert running["spec"]["nodeName"] in _names(raw.nodes)
    assert priority_class in _names(raw.priority_classes)
    assert queue in _names(raw.queues)
    assert hyper_node in _names(raw.hyper_nodes)
    assert "volcano" in _names(raw.volcano_groups, namespace)
    assert _names(raw.coscheduling_groups, namespace) == {"coscheduling"}
    assert _names(raw.volcano_jobs, namespace) == {"volcano"}
    assert _names(raw.batch_jobs, namespace) == {"batch"}
    if native:
        assert _names(raw.native_groups, namespace) == {"native"}
        assert raw.absent == ()
    else:
        assert raw.native_groups == []
        assert raw.absent == ("podgroups.scheduling.k8s.io",)
    assert all(raw.resource_versions[r] for r in ("nodes", "pods", "jobs.batch"))


def test_a_kind_the_server_does_not_serve_is_empty_and_absent(api: k8s.ApiClient) -> None:
    ghost = dataclasses.replace(
        HYPER_NODES, group="ghosts.lahar.dev", path="/apis/ghosts.lahar.dev/v1alpha1/hypernodes"
    )

    raw = list_for_snapshot(api, (NODES, ghost))

    assert raw.absent == ("hypernodes.ghosts.lahar.dev",)
    assert raw.hyper_nodes == []
    assert raw.nodes
    assert "hypernodes.ghosts.lahar.dev" not in raw.resource_versions


@pytest.fixture
def reader(
    api: k8s.ApiClient, namespace: str, dev_cluster: devcluster.DevCluster, tmp_path: Path
) -> Iterator[tuple[k8s.ApiClient, str]]:
    """A client authenticated as a new ServiceAccount of the test's namespace (bound to nothing),
    and the account's RBAC subject name."""
    account = "snapshot"
    apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": namespace},
        },
    )
    token = service_account_token(api, namespace, account, 600)
    config = yaml.safe_load(dev_cluster.kubeconfig.read_text())
    config["users"] = [{"name": account, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
    path = tmp_path / "snapshot.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    with connect(path) as client:
        yield client, account


def _binding(kind: str, name: str, namespace: str, account: str, role: str) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if kind == "RoleBinding" else {})}
    return {
        "apiVersion": RBAC_API,
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": "lahar-whatif"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def _lists(client: k8s.ApiClient) -> RawCluster | None:
    try:
        return list_for_snapshot(client)
    except MissingRight:  # (the binding not yet seen by the authorizer)
        return None


def test_no_binding_is_one_line_naming_the_right_and_the_cluster_role_is_enough(
    api: k8s.ApiClient, namespace: str, reader: tuple[k8s.ApiClient, str]
) -> None:
    client, account = reader
    with pytest.raises(MissingRight) as refused:
        list_for_snapshot(client)
    assert str(refused.value) == (
        "cannot list nodes at the cluster scope: bind the ClusterRole lahar-whatif "
        "(manifests/whatif/)"
    )
    assert (refused.value.verb, refused.value.resource) == ("list", "nodes")

    (cluster_role,) = (m for m in load_manifests(RBAC) if m.kind == "ClusterRole")
    apply_object(api, cluster_role.body, source=cluster_role.source)
    binding = f"lahar-whatif-{namespace}"
    apply_object(api, _binding("ClusterRoleBinding", binding, namespace, account, "ClusterRole"))
    try:
        raw = wait_until(
            lambda: _lists(client), timeout=30, what="the ClusterRole lahar-whatif to be enough"
        )
        assert {*raw.resource_versions, *raw.absent} == {k.resource for k in SNAPSHOT_KINDS}
        assert raw.nodes
    finally:
        delete(api, RBAC_API, "ClusterRoleBinding", binding)
        delete(api, RBAC_API, "ClusterRole", "lahar-whatif")


def _deployment(namespace: str, config_map: str) -> dict[str, Any]:
    """manifests/scheduler.yaml's Deployment in `namespace`, with no replicas, its policy
    ConfigMap named `config_map` (as kustomize names it with the hash of its data)."""
    (shipped,) = (
        m for m in load_manifests(ROOT / "manifests" / "scheduler.yaml") if m.kind == "Deployment"
    )
    body = copy.deepcopy(shipped.body)
    body["metadata"]["namespace"] = namespace
    body["spec"]["replicas"] = 0
    for volume in body["spec"]["template"]["spec"]["volumes"]:
        if volume["name"] == "policy":
            volume["configMap"]["name"] = config_map
    return body


def _policy(client: k8s.ApiClient, deployment: str) -> tuple[str, str] | None:
    try:
        return policy_in_force(client, deployment)
    except PolicyNotFound:  # (the binding not yet seen by the authorizer)
        return None


def test_the_role_is_what_reading_the_policy_in_force_takes(
    api: k8s.ApiClient, namespace: str, reader: tuple[k8s.ApiClient, str]
) -> None:
    client, account = reader
    config_map = "lahar-policy-5h2tkg8m9b"
    text = (ROOT / "manifests" / "base" / "policy" / "lahar.yaml").read_text()
    apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": config_map, "namespace": namespace},
            "data": {"lahar.yaml": text},
        },
    )
    apply_object(api, _deployment(namespace, config_map))
    deployment = f"{namespace}/lahar-scheduler"
    with pytest.raises(PolicyNotFound) as refused:
        policy_in_force(client, deployment)
    assert str(refused.value) == (
        f"cannot get deployments.apps in the namespace {namespace}: grant get on "
        "deployments.apps there, or pass --current-policy FILE"
    )

    (role,) = (m for m in load_manifests(RBAC) if m.kind == "Role")
    apply_object(api, {**role.body, "metadata": {**role.body["metadata"], "namespace": namespace}})
    apply_object(api, _binding("RoleBinding", "lahar-whatif", namespace, account, "Role"))

    found = wait_until(
        lambda: _policy(client, deployment), timeout=30, what="the Role lahar-whatif to be enough"
    )
    assert found == (text, f"ConfigMap {namespace}/{config_map} key lahar.yaml")
