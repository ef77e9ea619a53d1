"""Volcano's Job CRD (manifests/crds/crd-batch.yaml) on a real kube-apiserver: the TensorFlow
example applies unchanged and reads back as written plus the defaults (pod templates are kept
whole), Volcano's newer fields (a task's partitionPolicy, networkTopology) are stored intact, not
pruned, and reach the PodGroup the controller makes, with a Warning Event naming each field Lahar
does not act on (a NUMA topologyPolicy; network topology and partitions are honoured, so they are
not named); the short names vcjob and vj are served, and a field of the wrong type is
refused with a message naming it (by the schema, or first by the webhook)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION, PARTITION_KEY, Job
from extender.api.scheduling import API_VERSION as SCHEDULING_API_VERSION
from extender.kube import (
    KubeError,
    apply_object,
    list_objects,
    load_manifests,
    read,
    wait_established,
    wait_until,
)
from extender.kube.raw import send

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "crds" / "crd-batch.yaml"
EXAMPLE_FILE = ROOT / "examples" / "tf-dist-mnist.yaml"


@pytest.fixture(scope="module")
def job_crd(api: k8s.ApiClient) -> str:
    (crd,) = load_manifests(CRD_FILE)
    apply_object(api, crd.body, source=crd.source)
    wait_established(api, [crd.name], timeout=30)
    return crd.name


def _example(namespace: str) -> dict[str, Any]:
    (example,) = load_manifests(EXAMPLE_FILE)
    body = copy.deepcopy(example.body)
    body["metadata"]["namespace"] = namespace
    return body


def _read_job(api: k8s.ApiClient, name: str, namespace: str) -> dict[str, Any]:
    stored = read(api, BATCH_API_VERSION, "Job", name, namespace)
    assert stored is not None, f"Job {namespace}/{name} was not stored"
    return stored


@pytest.mark.usefixtures("job_crd")
def test_the_tensorflow_example_is_stored_as_written(api: k8s.ApiClient, namespace: str) -> None:
    body = _example(namespace)
    apply_object(api, body, source=str(EXAMPLE_FILE))

    stored = _read_job(api, body["metadata"]["name"], namespace)

    # Nothing pruned from the pod templates; only Volcano's defaults are added (queue and maxRetry,
    # by the schema and the webhook alike; the tasks' minAvailable by the webhook; the example
    # names its scheduler and the job's minAvailable).
    expected = copy.deepcopy(body["spec"])
    expected.update(queue="default", maxRetry=3)
    for task in expected["tasks"]:
        task["minAvailable"] = task["replicas"]
        task["maxRetry"] = 3
    assert stored["spec"] == expected
    ps, worker = stored["spec"]["tasks"]
    container = ps["template"]["spec"]["containers"][0]
    assert container["workingDir"] == "/opt/tf-benchmarks/scripts/tf_cnn_benchmarks"
    assert container["ports"] == [{"containerPort": 2222, "name": "tfjob-port"}]
    assert container["resources"] == {
        "requests": {"cpu": "1000m", "memory": "2048Mi"},
        "limits": {"cpu": "1000m", "memory": "2048Mi"},
    }
    assert ps["template"]["spec"]["imagePullSecrets"] == [{"name": "default-secret"}]
    assert worker["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]
    assert stored["spec"]["plugins"] == {"env": [], "svc": []}
    # The controller's model reads what the server stored.
    job = Job.model_validate(stored)
    assert [(t.name, t.replicas) for t in job.spec.tasks] == [("ps", 1), ("worker", 2)]
    assert job.spec.min_available == 3
    assert job.spec.policies[0].action == "RestartJob"


@pytest.mark.usefixtures("job_crd")
def test_a_plugin_without_arguments_keeps_its_name(api: k8s.ApiClient, namespace: str) -> None:
    """`ssh:` with no value is null; a non-nullable value would be pruned, dropping the plugin."""
    body = _example(namespace)
    body["metadata"]["name"] = "plugin-args"
    body["spec"]["plugins"] = {"ssh": None, "svc": ["--disable-network-policy=true"]}
    apply_object(api, body)

    stored = _read_job(api, "plugin-args", namespace)

    assert stored["spec"]["plugins"] == {"ssh": None, "svc": ["--disable-network-policy=true"]}


def _topology_job(namespace: str) -> dict[str, Any]:
    """The example with the worker task (2 replicas) in 2 partitions of 1 under a soft topology,
    and the whole job within the tier spine."""
    body = _example(namespace)
    body["metadata"]["name"] = "topology"
    body["spec"]["networkTopology"] = {"mode": "hard", "highestTierName": "spine"}
    body["spec"]["tasks"][1]["partitionPolicy"] = {
        "totalPartitions": 2,
        "partitionSize": 1,
        "minPartitions": 2,
        "networkTopology": {"mode": "soft", "highestTierAllowed": 1},
    }
    return body


@pytest.mark.usefixtures("job_crd")
def test_partitions_and_network_topology_are_stored_intact(
    api: k8s.ApiClient, namespace: str
) -> None:
    body = _topology_job(namespace)
    apply_object(api, body)

    stored = _read_job(api, "topology", namespace)

    assert stored["spec"]["networkTopology"] == body["spec"]["networkTopology"]
    worker = stored["spec"]["tasks"][1]
    assert worker["partitionPolicy"] == body["spec"]["tasks"][1]["partitionPolicy"]
    assert worker["minAvailable"] == 2  # minPartitions whole partitions of 1
    job = Job.model_validate(stored)
    policy = job.spec.tasks[1].partition_policy
    assert policy is not None
    assert (policy.total_partitions, policy.partition_size, policy.min_partitions) == (2, 1, 2)
    assert policy.network_topology is not None
    assert policy.network_topology.highest_tier_allowed == 1


@pytest.mark.usefixtures("job_crd")
def test_the_controller_carries_them_into_the_pod_group_and_warns_of_numa_only(
    api: k8s.ApiClient, namespace: str
) -> None:
    body = _topology_job(namespace)
    body["spec"]["tasks"][0]["topologyPolicy"] = "single-numa-node"  # ps asks for a whole CPU
    apply_object(api, body)
    uid = _read_job(api, "topology", namespace)["metadata"]["uid"]

    group = wait_until(
        lambda: read(api, SCHEDULING_API_VERSION, "PodGroup", f"topology-{uid}", namespace),
        timeout=30,
        what="the job's PodGroup",
    )
    spec = group["spec"]
    assert spec["networkTopology"] == {"mode": "hard", "highestTierName": "spine"}
    assert spec["subGroupPolicy"] == [
        {
            "name": "worker",
            "subGroupSize": 1,
            "minSubGroups": 2,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": [PARTITION_KEY],
            "networkTopology": {"mode": "soft", "highestTierAllowed": 1},
        }
    ]

    def warned() -> list[str]:
        events = list_objects(api, "v1", "Event", namespace=namespace)
        return sorted(
            e["message"]
            for e in events
            if e.get("reason") == "FieldNotHonoured"
            and e["involvedObject"].get("name") == "topology"
        )

    messages = wait_until(warned, timeout=30, what="the Events")  # (written before the group)
    assert [m.split(" is not honoured yet: ")[0] for m in messages] == [
        "spec.tasks[0].topologyPolicy"
    ]


@pytest.mark.usefixtures("job_crd")
def test_the_short_names_are_served(api: k8s.ApiClient) -> None:
    discovery = json.loads(send(api, "GET", "/apis/batch.volcano.sh/v1alpha1").read())

    jobs = next(r for r in discovery["resources"] if r["name"] == "jobs")
    assert jobs["kind"] == "Job"
    assert jobs["namespaced"] is True
    assert jobs["singularName"] == "job"
    assert sorted(jobs["shortNames"]) == ["vcjob", "vj"]
    assert any(r["name"] == "jobs/status" for r in discovery["resources"])


def _create(api: k8s.ApiClient, body: dict[str, Any]) -> None:
    """A plain create (POST), as `kubectl create` sends it."""
    namespace = body["metadata"]["namespace"]
    send(api, "POST", f"/apis/{BATCH_API_VERSION}/namespaces/{namespace}/jobs", body=body)


@pytest.mark.usefixtures("job_crd")
@pytest.mark.parametrize(
    ("submit", "message"),
    [
        (apply_object, r"\.spec\.tasks\[0\]\.replicas: expected numeric"),
        # A create reaches the mutating webhook before the schema is checked.
        (_create, r"spec\.tasks\[0\]\.replicas: Input should be a valid integer, got .two."),
    ],
    ids=["server-side-apply", "create"],
)
def test_replicas_of_the_wrong_type_are_refused(
    api: k8s.ApiClient, namespace: str, submit: Callable[..., object], message: str
) -> None:
    body = _example(namespace)
    body["metadata"]["name"] = "bad-replicas"
    body["spec"]["tasks"][0]["replicas"] = "two"

    with pytest.raises(KubeError, match=message):
        submit(api, body)
    assert read(api, BATCH_API_VERSION, "Job", "bad-replicas", namespace) is None
