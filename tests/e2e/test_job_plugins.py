"""Volcano's framework job plugins end to end: tensorflow, mpi, ray and hcclrank on the real
apiserver, webhook and controller, the pods run by KWOK on the test's own nodes.

Each Job names only its framework plugin; the webhook adds the plugins it needs (svc, and ssh for
mpi) as Volcano's does, and the pods the controller makes carry what Volcano gives them: the
tests read the created pod objects (env values, ports, commands, annotations) and the objects the
plugins keep.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION
from extender.kube import KubeError, read
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, NodeFactory
from tests.e2e.jobs import example, job, running, status, submit


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _pinned(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    """`body` with every task's pods on the test's own nodes (as `JobBuilder.pinned` does)."""
    toleration = {"key": TEST_KEY, "operator": "Equal", "value": namespace, "effect": "NoSchedule"}
    for task in body["spec"]["tasks"]:
        spec = task["template"]["spec"]
        spec.setdefault("nodeSelector", {})[TEST_KEY] = namespace
        spec.setdefault("tolerations", []).append(toleration)
    return body


def _plugins(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = job(api, namespace, name)["spec"]["plugins"]
    return found


TF = "tensorflow-benchmark"


def test_tensorflow_example_gets_tf_config(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """examples/tf-dist-mnist.yaml (tasks `ps` and `worker`) in its TensorFlow form: the
    plugins are only `tensorflow: [--ps=ps, --worker=worker, --port=2222]`, as in Volcano's e2e
    test. Each pod's TF_CONFIG lists the cluster and names its own task."""
    own_nodes(1, cpu="8")
    body = _pinned(example("tf-dist-mnist.yaml", namespace), namespace)
    body["spec"]["plugins"] = {"tensorflow": ["--ps=ps", "--worker=worker", "--port=2222"]}
    submit(api, body)
    made = running(api, namespace, TF, 3)
    assert _plugins(api, namespace, TF) == {
        "tensorflow": ["--ps=ps", "--worker=worker", "--port=2222"],
        "svc": [],  # added by the webhook, as Volcano's adds it
    }
    cluster = {
        "ps": [f"{TF}-ps-0.{TF}:2222"],
        "worker": [f"{TF}-worker-0.{TF}:2222", f"{TF}-worker-1.{TF}:2222"],
    }
    for name, role, index in (
        ("ps-0", "ps", 0),
        ("worker-0", "worker", 0),
        ("worker-1", "worker", 1),
    ):
        pod = made[f"{TF}-{name}"]
        [container] = pod["spec"]["containers"]
        config = json.loads(_env(container)["TF_CONFIG"])
        assert config == {"cluster": cluster, "task": {"type": role, "index": index}}
        # the hosts it lists resolve through svc: each pod is its own host under the job
        assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (f"{TF}-{name}", TF)
        assert container["ports"] == [
            {"containerPort": 2222, "name": "tfjob-port", "protocol": "TCP"}
        ]
    assert read(api, "v1", "Service", TF, namespace) is not None
    resources = status(api, namespace, TF)["controlledResources"]
    assert resources == {"plugin-tensorflow": "tensorflow", "plugin-svc": "svc"}


def test_mpi_master_gets_the_worker_hosts(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """The master's containers and init containers get MPI_HOST; every container of every pod
    opens the ssh port; the webhook adds svc and ssh, so the hosts resolve and the pods share a
    key pair."""
    own_nodes(1, cpu="8")
    body = (
        make_job("mpi")
        .ns(namespace)
        .task("launcher", 1)
        .container("launcher", "setup", init=True)
        .task("node", 2)
        .plugin("mpi", "--master=launcher", "--worker=node")
        .pinned(TEST_KEY, namespace)
        .build()
    )
    submit(api, body)
    made = running(api, namespace, "mpi", 3)
    assert _plugins(api, namespace, "mpi") == {
        "mpi": ["--master=launcher", "--worker=node"],
        "svc": [],
        "ssh": [],
    }
    port = {"name": "mpijob-port", "containerPort": 22, "protocol": "TCP"}
    launcher = made["mpi-launcher-0"]["spec"]
    for container in (*launcher["containers"], *launcher["initContainers"]):
        assert _env(container)["MPI_HOST"] == "mpi-node-0.mpi,mpi-node-1.mpi"
        assert container["ports"] == [port]
    for name in ("mpi-node-0", "mpi-node-1"):
        [container] = made[name]["spec"]["containers"]
        assert "MPI_HOST" not in _env(container)
        assert container["ports"] == [port]
        assert made[name]["spec"]["hostname"] == name
    assert read(api, "v1", "Secret", "mpi-ssh", namespace) is not None
    resources = status(api, namespace, "mpi")["controlledResources"]
    assert {"plugin-mpi", "plugin-svc", "plugin-ssh"} <= set(resources)


def test_mpi_without_its_master_task_is_refused(api: k8s.ApiClient, namespace: str) -> None:
    """Volcano's webhook refuses it; Lahar's says which field and which task."""
    body = make_job("nomaster").ns(namespace).task("worker", 2).plugin("mpi").build()
    with pytest.raises(KubeError, match=r"spec\.plugins\.mpi: no task is named 'master'"):
        submit(api, body)
    assert job(api, namespace, "nomaster") == {}


def test_ray_head_and_workers_are_wired(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """The head container starts the Ray head with its three ports, each worker container joins
    it through the head pod's host, and the Service `<job>-head-svc` selects the head."""
    own_nodes(1, cpu="8")
    body = (
        make_job("ray")
        .ns(namespace)
        .task("head", 1)
        .set("spec.tasks[0].template.spec.containers[0].name", "head")
        .task("worker", 2)
        .set("spec.tasks[1].template.spec.containers[0].name", "worker")
        .plugin("ray", "--port=2345")
        .pinned(TEST_KEY, namespace)
        .build()
    )
    submit(api, body)
    made = running(api, namespace, "ray", 3)
    assert _plugins(api, namespace, "ray") == {"ray": ["--port=2345"], "svc": []}
    [head] = made["ray-head-0"]["spec"]["containers"]
    assert head["command"] == [
        "sh",
        "-c",
        "ray start --head --block --dashboard-host=0.0.0.0 --port=2345 --dashboard-port=8265 "
        "--ray-client-server-port=10001",
    ]
    assert [(p["name"], p["containerPort"]) for p in head["ports"]] == [
        ("gcs", 2345),
        ("dashboard", 8265),
        ("client-server", 10001),
    ]
    for name in ("ray-worker-0", "ray-worker-1"):
        [worker] = made[name]["spec"]["containers"]
        assert worker["command"] == [
            "sh",
            "-c",
            "ray start --block --address=ray-head-0.ray:2345",
        ]
        assert "ports" not in worker
    service = read(api, "v1", "Service", "ray-head-svc", namespace)
    assert service is not None
    selector = service["spec"]["selector"]
    assert selector["volcano.sh/task-spec"] == "head"
    head_labels = made["ray-head-0"]["metadata"]["labels"]
    assert all(head_labels.get(k) == v for k, v in selector.items())
    assert not all(
        made["ray-worker-0"]["metadata"]["labels"].get(k) == v for k, v in selector.items()
    )
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [
        ("gcs", 2345),
        ("dashboard", 8265),
        ("client-server", 10001),
    ]
    assert status(api, namespace, "ray")["controlledResources"]["plugin-ray"] == "ray"


def test_hcclrank_annotates_each_pod_with_its_rank(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """Ranks run across the master task and then the worker task; a side task gets none."""
    own_nodes(1, cpu="8")
    body = (
        make_job("npu")
        .ns(namespace)
        .task("master", 2)
        .task("worker", 2)
        .task("monitor", 1)
        .plugin("hcclrank")
        .pinned(TEST_KEY, namespace)
        .build()
    )
    submit(api, body)
    made = running(api, namespace, "npu", 5)
    ranks = {
        name: pod["metadata"]["annotations"].get("hccl/rankIndex") for name, pod in made.items()
    }
    assert ranks == {
        "npu-master-0": "0",
        "npu-master-1": "1",
        "npu-worker-0": "2",
        "npu-worker-1": "3",
        "npu-monitor-0": None,
    }
    assert read(api, BATCH_API_VERSION, "Job", "npu", namespace) is not None
    assert _plugins(api, namespace, "npu") == {"hcclrank": []}  # needs no other plugin
