"""The native gang API of Kubernetes 1.37 (scheduling.k8s.io/v1beta1, GenericWorkload) on the dev
cluster: served on 1.37, where the stock kube-scheduler places a PodGroup's pods all or none and
says so in its PodGroupInitiallyScheduled condition, and kube-controller-manager removes the
PodGroup's protection finalizer once no pod names it; absent on 1.35."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster.cluster import native_gangs
from extender.kube import apply_object, delete, read, wait_until
from extender.kube.raw import ApiStatusError, send
from tests.builders import make_pod

API_VERSION = "scheduling.k8s.io/v1beta1"


def _served(api: k8s.ApiClient) -> set[str]:
    try:
        found = send(api, "GET", f"/apis/{API_VERSION}").read()
    except ApiStatusError as error:
        if error.status == 404:  # the version is not served
            return set()
        raise
    return {r["name"] for r in json.loads(found)["resources"]}


def _gang(api: k8s.ApiClient, namespace: str, name: str, min_count: int, pods: int) -> None:
    apply_object(
        api,
        {
            "apiVersion": API_VERSION,
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
        },
    )
    for i in range(pods):
        pod = make_pod(f"{name}-{i}").ns(namespace).cpu("100m").build()
        pod["spec"]["schedulingGroup"] = {"podGroupName": name}
        apply_object(api, pod)


def _bound(api: k8s.ApiClient, namespace: str, name: str, pods: int) -> int:
    found = (read(api, "v1", "Pod", f"{name}-{i}", namespace) for i in range(pods))
    return sum(1 for pod in found if pod and pod["spec"].get("nodeName"))


def _condition(group: dict[str, Any] | None) -> dict[str, Any]:
    conditions = ((group or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodGroupInitiallyScheduled"), {})


def test_the_native_gang_api_is_served_on_1_37_only(
    api: k8s.ApiClient, dev_cluster: devcluster.DevCluster
) -> None:
    served = _served(api)
    if native_gangs(dev_cluster.state.kubernetes_version):
        assert {"podgroups", "podgroups/status", "workloads"} <= served
    else:
        assert served == set()


def test_a_native_gang_binds_whole_once_min_count_pods_exist(
    api: k8s.ApiClient, namespace: str, dev_cluster: devcluster.DevCluster
) -> None:
    if not native_gangs(dev_cluster.state.kubernetes_version):
        pytest.skip("the native gang API is served from Kubernetes 1.37")
    _gang(api, namespace, "g", min_count=3, pods=2)
    with pytest.raises(TimeoutError):
        wait_until(lambda: _bound(api, namespace, "g", 2), timeout=3, what="a member to bind")

    _gang(api, namespace, "g", min_count=3, pods=3)

    wait_until(lambda: _bound(api, namespace, "g", 3) == 3, timeout=60, what="the gang to bind")
    group = read(api, API_VERSION, "PodGroup", "g", namespace)
    assert group is not None
    assert _condition(group)["status"] == "True"
    assert "scheduling.k8s.io/podgroup-protection" in group["metadata"]["finalizers"]
    for i in range(3):
        delete(api, "v1", "Pod", f"g-{i}", namespace)
    delete(api, API_VERSION, "PodGroup", "g", namespace)
    wait_until(
        lambda: read(api, API_VERSION, "PodGroup", "g", namespace) is None,
        timeout=60,
        what="kube-controller-manager to let the PodGroup go once its pods are gone",
    )
