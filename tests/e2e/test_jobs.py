"""Volcano Jobs end to end: the real apiserver, the Lahar controller, the stock kube-scheduler
calling Lahar, and KWOK playing the kubelet (it runs bound pods and ends them when a test asks).

The TensorFlow example users run on Volcano is applied unchanged; the other jobs are built with
`make_job` and pinned to the test's own nodes.
"""

from __future__ import annotations

import base64
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes import client as k8s

from extender import devcluster
from extender.api.scheduling import API_VERSION
from extender.cli.job_cmd import describe
from extender.devcluster.lifecycle import end_pod
from extender.kube import KubeError, evict_pod, read, wait_until
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, NodeFactory, events, scheduled_counts_of
from tests.e2e.gangs import BindTimeline, finish
from tests.e2e.jobs import (
    CONTROLLER,
    example,
    job,
    pods,
    restart_controller,
    running,
    status,
    submit,
    wait_job,
)

TF = "tensorflow-benchmark"


def _env(pod: dict[str, Any]) -> dict[str, Any]:
    container = pod["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_tensorflow_example_runs_unchanged(api: k8s.ApiClient, namespace: str) -> None:
    """Volcano's TensorFlow example: a PodGroup of 3, pods named as on Volcano with their env,
    hostfiles and annotations, gang-scheduled by Lahar, Pending -> Running -> Completed when the
    workers succeed (TaskCompleted -> CompleteJob ends the ps)."""
    with BindTimeline(api, namespace) as timeline:
        submit(api, example("tf-dist-mnist.yaml", namespace))
        running(api, namespace, TF, 3)
    assert timeline.partial() == []
    uid = job(api, namespace, TF)["metadata"]["uid"]
    group = read(api, API_VERSION, "PodGroup", f"{TF}-{uid}", namespace)
    assert group is not None, "no PodGroup <job>-<uid>"
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert group["spec"]["minResources"]["cpu"] == "5"

    made = pods(api, namespace, TF)
    assert sorted(made) == [f"{TF}-ps-0", f"{TF}-worker-0", f"{TF}-worker-1"]
    worker = made[f"{TF}-worker-1"]
    annotations = worker["metadata"]["annotations"]
    assert annotations["scheduling.k8s.io/group-name"] == f"{TF}-{uid}"
    assert annotations["volcano.sh/task-spec"] == "worker"
    assert annotations["volcano.sh/job-version"] == "0"
    assert worker["metadata"]["labels"]["volcano.sh/job-name"] == TF
    assert worker["spec"]["schedulerName"] == "volcano"
    assert worker["spec"]["hostname"] == f"{TF}-worker-1" and worker["spec"]["subdomain"] == TF
    env = _env(worker)
    assert env["VK_TASK_INDEX"] == "1" and env["VC_TASK_INDEX"] == "1"
    assert "VC_WORKER_HOSTS" in env and "VC_PS_NUM" in env
    mounts = {m["mountPath"] for m in worker["spec"]["containers"][0]["volumeMounts"]}
    assert "/etc/volcano" in mounts
    hosts = read(api, "v1", "ConfigMap", f"{TF}-svc", namespace)
    assert hosts is not None
    assert hosts["data"]["worker.host"] == f"{TF}-worker-0.{TF}\n{TF}-worker-1.{TF}"
    assert hosts["data"]["ps.host"] == f"{TF}-ps-0.{TF}"
    service = read(api, "v1", "Service", TF, namespace)
    assert service is not None and service["spec"]["clusterIP"] == "None"

    state = wait_job(api, namespace, TF, "Running")
    assert state["running"] == 3 and state["minAvailable"] == 3
    finish(api, namespace, [f"{TF}-worker-0", f"{TF}-worker-1"])
    done = wait_job(api, namespace, TF, "Completed")
    phases = [c["status"] for c in done["conditions"]]
    assert phases[:2] == ["Pending", "Running"] and phases[-2:] == ["Completing", "Completed"]
    assert done["succeeded"] == 2
    assert done["taskStatusCount"]["worker"]["phase"] == {"Succeeded": 2}
    assert set(done["controlledResources"]) == {"plugin-env", "plugin-svc"}
    wait_until(
        lambda: f"{TF}-ps-0" not in pods(api, namespace, TF),
        timeout=30,
        what="the ps pod to be deleted once the job completed",
    )


def test_evicted_pod_restarts_the_job(api: k8s.ApiClient, namespace: str) -> None:
    """PodEvicted -> RestartJob (the example's policy): every pod is made again at version 1."""
    submit(api, example("tf-dist-mnist.yaml", namespace))
    before = running(api, namespace, TF, 3)
    victim = before[f"{TF}-worker-0"]["metadata"]
    assert evict_pod(api, namespace, victim["name"], victim["uid"])
    after = wait_until(
        lambda: (
            s
            if (s := status(api, namespace, TF)).get("version") == 1
            and (s.get("state") or {}).get("phase") == "Running"
            else None
        ),
        timeout=60,
        what="the job to run again at version 1",
        describe=lambda: str(status(api, namespace, TF)),
    )
    assert after["retryCount"] == 1
    assert "Restarting" in [c["status"] for c in after["conditions"]]
    again = running(api, namespace, TF, 3)
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in again.values()} == {"1"}
    assert all(p["metadata"]["uid"] != before[n]["metadata"]["uid"] for n, p in again.items())
    counts = scheduled_counts_of(api, namespace, again, times=2)
    assert all(count == 2 for count in counts.values()), counts  # each pod bound once per version


def test_retries_exhausted_fail_the_job(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """PodFailed -> RestartJob with maxRetry 2: the second failure fails the job, and nothing
    of it keeps running."""
    own_nodes(1, cpu="4")
    body = (
        make_job("flaky")
        .ns(namespace)
        .task("main", 2)
        .policy("PodFailed", "RestartJob")
        .max_retry(2)
        .pinned(TEST_KEY, namespace)
        .build()
    )
    submit(api, body)
    for attempt in range(2):
        running(api, namespace, "flaky", 2)
        end_pod(api, namespace, "flaky-main-0", exit_code=1)
        if attempt == 0:
            wait_until(
                lambda: status(api, namespace, "flaky").get("version") == 1,
                timeout=60,
                what="the first restart",
            )
    failed = wait_job(api, namespace, "flaky", "Failed")
    assert failed["retryCount"] == 2
    assert failed["state"]["reason"] == "MaxRetryExceeded"
    wait_until(
        lambda: (
            not any(
                p["status"].get("phase") in ("Pending", "Running")
                for p in pods(api, namespace, "flaky").values()
            )
        ),
        timeout=30,
        what="no pod of the failed job to keep running",
    )


def test_ssh_plugin_secret_holds_a_valid_key_pair(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    own_nodes(1, cpu="4")
    body = (
        make_job("mpi")
        .ns(namespace)
        .task("launcher", 1)
        .task("worker", 2)
        .plugin("ssh")
        .plugin("svc")
        .pinned(TEST_KEY, namespace)
        .build()
    )
    submit(api, body)
    made = running(api, namespace, "mpi", 3)
    secret = read(api, "v1", "Secret", "mpi-ssh", namespace)
    assert secret is not None
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    key = serialization.load_pem_private_key(data["id_rsa"], password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    public = serialization.load_ssh_public_key(data["id_rsa.pub"])
    assert public.public_numbers() == key.public_key().public_numbers()
    assert data["authorized_keys"].strip() == data["id_rsa.pub"].strip()
    config = data["config"].decode()
    assert "StrictHostKeyChecking no" in config and "HostName mpi-worker-1.mpi" in config
    volumes = {v["name"]: v for v in made["mpi-worker-0"]["spec"]["volumes"]}
    assert any(v.get("secret", {}).get("secretName") == "mpi-ssh" for v in volumes.values())
    assert status(api, namespace, "mpi")["controlledResources"]["plugin-ssh"] == "ssh"


def test_ttl_deletes_a_finished_job_and_its_objects(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """ttlSecondsAfterFinished: the job is deleted after it completes, and garbage collection
    removes its pods, PodGroup and plugin objects."""
    own_nodes(1, cpu="4")
    body = (
        make_job("brief")
        .ns(namespace)
        .task("main", 2)
        .plugin("svc")
        .plugin("ssh")
        .ttl(2)
        .pinned(TEST_KEY, namespace)
        .build()
    )
    submit(api, body)
    running(api, namespace, "brief", 2)
    uid = job(api, namespace, "brief")["metadata"]["uid"]
    finish(api, namespace, ["brief-main-0", "brief-main-1"])
    wait_job(api, namespace, "brief", "Completed")
    owned = [
        ("v1", "Service", "brief"),
        ("v1", "ConfigMap", "brief-svc"),
        ("v1", "Secret", "brief-ssh"),
        ("networking.k8s.io/v1", "NetworkPolicy", "brief"),
        (API_VERSION, "PodGroup", f"brief-{uid}"),
        ("v1", "Pod", "brief-main-0"),
    ]
    assert all(read(api, v, k, n, namespace) is not None for v, k, n in owned)
    wait_until(
        lambda: not job(api, namespace, "brief"), timeout=30, what="the TTL to delete the job"
    )
    wait_until(
        lambda: all(read(api, v, k, n, namespace) is None for v, k, n in owned),
        timeout=60,
        what="garbage collection to remove the job's objects",
        describe=lambda: str([n for v, k, n in owned if read(api, v, k, n, namespace)]),
    )


def test_scaling_a_task_up_and_down(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    own_nodes(1, cpu="8")
    body = make_job("elastic").ns(namespace).task("main", 2).min_available(1)
    submit(api, body.pinned(TEST_KEY, namespace).build())
    running(api, namespace, "elastic", 2)
    scaled = body.build()
    scaled["spec"]["tasks"][0]["replicas"] = 4
    submit(api, scaled)
    assert sorted(running(api, namespace, "elastic", 4)) == [f"elastic-main-{i}" for i in range(4)]
    scaled["spec"]["tasks"][0]["replicas"] = 1
    submit(api, scaled)
    wait_until(
        lambda: sorted(pods(api, namespace, "elastic")) == ["elastic-main-0"],
        timeout=60,
        what="the job to scale down to one pod",
    )
    assert (status(api, namespace, "elastic").get("state") or {}).get("phase") == "Running"


def test_rejected_pod_template_is_reported_not_retried_hot(
    api: k8s.ApiClient, kubeconfig: Path, namespace: str, own_nodes: NodeFactory
) -> None:
    """A template the apiserver refuses: a condition and an Event on the job while the controller
    tries again with backoff (other jobs go on), then, the template being invalid for good, the
    job Failed with reason PodCreateFailed and the server's words: in `kubectl get vcjob` (the
    CRD's Status column) and in `lahar job view`, after a handful of attempts."""
    own_nodes(1, cpu="4")
    bad = make_job("bad").ns(namespace).task("main", 1).pinned(TEST_KEY, namespace).build()
    # The webhook checks much of a template (docs/admission-rules.md); the API server the rest.
    container = bad["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container["terminationMessagePolicy"] = "Sometimes"
    submit(api, bad)
    refused = wait_until(
        lambda: [
            c
            for c in status(api, namespace, "bad").get("conditions", [])
            if c.get("reason") == "PodCreateFailed"
        ],
        timeout=60,
        what="a PodCreateFailed condition on the job",
        describe=lambda: str(status(api, namespace, "bad")),
    )
    assert "spec.containers[0].terminationMessagePolicy" in refused[0]["message"]
    assert refused[0]["status"] == "Pending"
    warned = events(api, namespace, reason="FailedCreatePod", kind="Job", name="bad")
    assert warned and "Sometimes" in warned[0]["message"]
    good = make_job("good").ns(namespace).task("main", 1).pinned(TEST_KEY, namespace).build()
    submit(api, good)
    running(api, namespace, "good", 1)
    assert pods(api, namespace, "bad") == {}

    failed = wait_job(api, namespace, "bad", "Failed", timeout=60)
    assert failed["state"]["reason"] == "PodCreateFailed"
    assert "spec.containers[0].terminationMessagePolicy" in failed["state"]["message"]
    assert "no pod could be created for" in failed["state"]["message"]
    assert [c["status"] for c in failed["conditions"]][-1] == "Failed"
    assert _printed_status(kubeconfig, namespace, "bad") == "Failed"
    shown = describe(job(api, namespace, "bad"), None, [])
    assert "Status:        Failed (PodCreateFailed)" in shown
    assert any(line.startswith("Message:") and "terminationMessagePolicy" in line for line in shown)
    attempts = sum(
        e.get("count") or 1
        for e in events(api, namespace, reason="FailedCreatePod", kind="Job", name="bad")
    )
    assert 2 <= attempts <= 12, attempts  # backoff: a handful of tries, not a hot loop
    time.sleep(3)  # a failed job is tried no more
    assert attempts == sum(
        e.get("count") or 1
        for e in events(api, namespace, reason="FailedCreatePod", kind="Job", name="bad")
    )


def _printed_status(kubeconfig: Path, namespace: str, name: str) -> str:
    """The STATUS column `kubectl get vcjob` prints (the CRD's printer column)."""
    kubectl = devcluster.ensure_binaries(quiet=True).kubectl
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(kubeconfig), "-n", namespace, "get", "vcjob", name],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    header, row = out.splitlines()[:2]
    return dict(zip(header.split(), row.split(), strict=False))["STATUS"]


def test_unknown_plugin_is_refused_at_creation(api: k8s.ApiClient, namespace: str) -> None:
    """The webhook refuses it, naming the field (a Job created without the webhook fails with
    reason InvalidJob instead: see the controller's unit tests)."""
    with pytest.raises(KubeError, match=r"spec\.plugins\.tensorboard: unknown plugin"):
        submit(api, make_job("odd").ns(namespace).task("main", 1).plugin("tensorboard").build())
    assert job(api, namespace, "odd") == {}


def test_controller_killed_mid_job_makes_no_duplicates(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
) -> None:
    """The controller is killed as soon as the first pods of a 16-pod job exist and started
    again: each pod exists once, was made once, and the status is whole."""
    own_nodes(2, cpu="16")
    submit(api, make_job("big").ns(namespace).task("main", 16).pinned(TEST_KEY, namespace).build())
    wait_until(lambda: pods(api, namespace, "big"), timeout=60, what="the first pods")
    dev_cluster.stop_component(CONTROLLER, kill=True)
    try:
        partial = len(pods(api, namespace, "big"))
    finally:
        restart_controller(dev_cluster)
    made = running(api, namespace, "big", 16)
    state = wait_job(api, namespace, "big", "Running")
    assert state["version"] == 0 and state["retryCount"] == 0 and state["running"] == 16
    assert len({p["metadata"]["uid"] for p in made.values()}) == 16
    assert set(scheduled_counts_of(api, namespace, made).values()) == {1}
    assert partial <= 16


def _command(job_body: dict[str, Any], action: str) -> dict[str, Any]:
    """A Command as `vcctl job suspend|resume` creates it."""
    meta = job_body["metadata"]
    target = {
        "apiVersion": job_body["apiVersion"],
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
    }
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "name": f"{meta['name']}-{action.lower()}",
            "namespace": meta["namespace"],
            "ownerReferences": [target],
        },
        "target": target,
        "action": action,
    }


def test_commands_abort_and_resume_a_job(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """`vcctl job suspend` (AbortJob): the pods go, the job is Aborted; `vcctl job resume`
    (ResumeJob): it runs again at the next version. Each Command is deleted once performed."""
    own_nodes(1, cpu="4")
    submit(
        api, make_job("pausable").ns(namespace).task("main", 2).pinned(TEST_KEY, namespace).build()
    )
    running(api, namespace, "pausable", 2)
    stored = job(api, namespace, "pausable")
    submit(api, _command(stored, "AbortJob"))
    aborted = wait_job(api, namespace, "pausable", "Aborted")
    assert aborted["state"]["reason"] == "AbortJob"
    wait_until(lambda: not pods(api, namespace, "pausable"), timeout=30, what="the pods to go")
    wait_until(
        lambda: (
            read(api, "bus.volcano.sh/v1alpha1", "Command", "pausable-abortjob", namespace) is None
        ),
        timeout=30,
        what="the performed Command to be deleted",
    )
    submit(api, _command(stored, "ResumeJob"))
    again = running(api, namespace, "pausable", 2)
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in again.values()} == {"1"}
    resumed = wait_job(api, namespace, "pausable", "Running")
    assert resumed["version"] == 1 and resumed["retryCount"] == 0
