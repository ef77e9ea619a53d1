"""Volcano's Job CRD (manifests/base/crd-batch.yaml) on a real kube-apiserver: the TensorFlow
example applies unchanged and reads back as written plus the webhook's defaults (pod templates are
kept whole, the schema adds no defaults), the short names vcjob and vj are served, and a field of
the wrong type is refused with a message naming it (by the schema, or first by the webhook)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION, Job
from extender.kube import KubeError, apply_object, load_manifests, read, wait_established
from extender.kube.raw import send

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "base" / "crd-batch.yaml"
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

    # Nothing pruned from the pod templates, nothing defaulted by the schema: only the admission
    # webhook's defaults are added (the example names its scheduler and the job's minAvailable).
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
