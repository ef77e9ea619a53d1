"""The dev cluster is a real control plane: the stock scheduler binds, KWOK runs pods, and
kube-controller-manager's garbage collector, namespace and service-account controllers work."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster.lifecycle import end_pod
from extender.kube import apply_object, delete, read, wait_until
from tests.builders import make_pod
from tests.integration.helpers import phase, pod_when


def test_servers_report_the_pinned_kubernetes_version(
    api: k8s.ApiClient, dev_cluster: devcluster.DevCluster
) -> None:
    """The version tests/controlplane pins for the minor the suite runs (LAHAR_KUBERNETES)."""
    pinned = dev_cluster.state.kubernetes_version
    assert pinned in ("v1.35.4", "v1.37.2")
    info = k8s.VersionApi(api).get_code()
    assert info.git_version == pinned
    assert (info.major, info.minor) == ("1", pinned.split(".")[1])


def test_default_scheduler_binds_a_pod_and_kwok_runs_it(api: k8s.ApiClient, namespace: str) -> None:
    apply_object(api, make_pod("web").ns(namespace).cpu("500m").memory("128Mi").build())

    pod = pod_when(api, namespace, "web", "to run", lambda p: phase(p) == "Running")

    assert pod["spec"]["nodeName"].startswith("kwok-node-")
    assert pod["status"]["podIP"].startswith("10.244.")
    conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert conditions["Ready"] == "True"


def test_a_pod_too_big_for_every_node_stays_pending(api: k8s.ApiClient, namespace: str) -> None:
    apply_object(api, make_pod("huge").ns(namespace).cpu("64").build())

    def unschedulable(pod: dict[str, Any]) -> bool:
        conditions = (pod.get("status") or {}).get("conditions") or []
        return any(c.get("reason") == "Unschedulable" for c in conditions)

    pod = pod_when(api, namespace, "huge", "to be marked Unschedulable", unschedulable)

    assert not pod["spec"].get("nodeName")
    message = next(c["message"] for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert "Insufficient cpu" in message


@pytest.mark.parametrize(
    ("exit_code", "expected_phase", "reason"),
    [(0, "Succeeded", "Completed"), (3, "Failed", "Error")],
)
def test_a_running_pod_ends_with_the_exit_code_a_test_asks_for(
    api: k8s.ApiClient, namespace: str, exit_code: int, expected_phase: str, reason: str
) -> None:
    apply_object(api, make_pod("job").ns(namespace).cpu("100m").build())
    pod_when(api, namespace, "job", "to run", lambda p: phase(p) == "Running")

    end_pod(api, namespace, "job", exit_code)

    pod = pod_when(
        api, namespace, "job", f"to be {expected_phase}", lambda p: phase(p) != "Running"
    )
    assert phase(pod) == expected_phase
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (exit_code, reason)


def test_garbage_collector_deletes_dependents_of_a_deleted_owner(
    api: k8s.ApiClient, namespace: str
) -> None:
    owner = apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "owner", "namespace": namespace},
        },
    )
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "dependent",
                "namespace": namespace,
                "ownerReferences": [reference],
            },
        },
    )

    delete(api, "v1", "ConfigMap", "owner", namespace)

    wait_until(
        lambda: read(api, "v1", "ConfigMap", "dependent", namespace) is None,
        timeout=60,
        what="the garbage collector to delete the dependent ConfigMap",
    )


def test_namespace_deletion_completes_and_removes_its_pods(api: k8s.ApiClient) -> None:
    name = "deleted-namespace-test"
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", name),
        timeout=60,
        what="the service-account controller to create the default ServiceAccount",
    )
    apply_object(api, make_pod("doomed").ns(name).build())
    pod_when(api, name, "doomed", "to run", lambda p: phase(p) == "Running")

    delete(api, "v1", "Namespace", name)

    wait_until(
        lambda: read(api, "v1", "Namespace", name) is None,
        timeout=90,
        what=f"namespace {name} to be deleted by the namespace controller",
    )
