"""Lahar as it ships, on a real node: the image built from the Dockerfile, `manifests/` applied as
the README says, every Deployment rolled out in real pods (kubelet, containerd, runc) in a namespace
enforcing Pod Security's restricted standard, Volcano's TensorFlow example run through the in-pod
kube-scheduler, extender, controller and webhook, and each component failed over as a cluster
fails it; last, the Helm chart installed, rolled out and uninstalled as its README says.

The cluster is a dev cluster of its own (`dev-cluster up --real-node`): the real node runs the
pods of lahar-system, KWOK nodes take every workload. Tests run in file order and share the one
install; the failover tests come last. Figures (apply to Ready, each failover) are printed with
`measured:` (run with `-s` to see them).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

import extender
from extender import devcluster
from extender.devcluster import ensure_tool, real_node
from extender.kube import KubeError, apply_object, connect, delete, list_objects, read, wait_until
from tests.builders import make_group, make_pod, make_queue
from tests.e2e.gangs import BindTimeline, finish
from tests.e2e.jobs import running, wait_job

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="a real node needs root (kubelet, containerd)"),
]

REPO = Path(__file__).resolve().parents[2]
NS = real_node.NAMESPACE
DEPLOYMENTS = ("lahar-scheduler", "lahar-controller", "lahar-webhook")
SCHEDULER_LEASE = "lahar-scheduler"
# The README's install, as this test runs it: the overlay (the image set, nothing else) and the
# commands. `test_the_readme_says_what_this_test_runs` holds the README to these lines.
README_OVERLAY = """\
resources:
  - ../manifests
images:
  - {name: lahar, newName: registry.example.com/lahar, newTag: "0.1.0"}
"""
README_CRDS = "kubectl apply --server-side -k manifests/crds/"
README_APPLY = "kubectl apply --server-side -k lahar/"
README_UNINSTALL = "kubectl delete -k lahar/"  # the work stays
README_REMOVE_WORK = (
    "kubectl delete vcjob --all -A",
    README_UNINSTALL,
    "kubectl delete -k manifests/crds/",
)
README_ROLLOUT = (
    "kubectl -n lahar-system rollout status deployment lahar-scheduler lahar-controller "
    "lahar-webhook"
)
THE_IMAGE = ("registry.example.com/lahar", "localhost/lahar")  # README's name -> the built one
# The Helm chart's install (charts/lahar/README.md), as the last test runs it once the kustomize
# install and the work are removed: `test_the_chart_readme_says_what_this_test_runs` holds the
# chart's README to these lines.
CHART_README = REPO / "charts" / "lahar" / "README.md"
HELM_NAMESPACE = "kubectl create namespace lahar-system"
HELM_INSTALL = (
    "helm install lahar charts/lahar --namespace lahar-system --take-ownership "
    "--set image.repository=registry.example.com/lahar"
)
HELM_UNINSTALL = "helm uninstall lahar --namespace lahar-system"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devcluster.DevCluster]:
    options = devcluster.ClusterOptions(
        state_dir=tmp_path_factory.mktemp("real-node"),
        nodes=4,
        node_cpu="8",
        die_with_parent=True,
        real_node=True,
        kubernetes=devcluster.DEFAULT_KUBERNETES,
        ready_timeout=300,
    )
    cluster = devcluster.up(options)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def rapi(real: devcluster.DevCluster) -> Iterator[k8s.ApiClient]:
    with connect(real.kubeconfig) as client:
        yield client


def kubectl(
    cluster: devcluster.DevCluster, *args: str, cwd: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    binary = devcluster.ensure_binaries(quiet=True, kubernetes=devcluster.DEFAULT_KUBERNETES)
    result = subprocess.run(
        [str(binary.kubectl), f"--kubeconfig={cluster.kubeconfig}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the README's commands run in: `manifests/` and the overlay `lahar/` beside it
    (the image set to the one built here)."""
    folder = tmp_path_factory.mktemp("install")
    (folder / "manifests").symlink_to(REPO / "manifests")
    (folder / "lahar").mkdir()
    (folder / "lahar" / "kustomization.yaml").write_text(README_OVERLAY.replace(*THE_IMAGE))
    return folder


@pytest.fixture(scope="module")
def installed(real: devcluster.DevCluster, checkout: Path) -> dict[str, float]:
    """The README's install: seconds to apply and until every Deployment rolled out."""
    folder = checkout
    started = time.monotonic()
    kubectl(real, *README_CRDS.split()[1:], cwd=folder)
    kubectl(real, *README_APPLY.split()[1:], cwd=folder)
    applied = time.monotonic() - started
    kubectl(real, *README_ROLLOUT.split()[1:], "--timeout=5m", cwd=folder)
    ready = time.monotonic() - started
    print(f"\nmeasured: apply {applied:.1f} s, every Deployment rolled out {ready:.1f} s after it")
    return {"applied": applied, "ready": ready}


def lahar_pods(api: k8s.ApiClient, component: str) -> list[dict[str, Any]]:
    return list_objects(
        api, "v1", "Pod", namespace=NS, label_selector=f"app.kubernetes.io/component={component}"
    )


def restarts(pod: dict[str, Any], container: str) -> int:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status["name"] == container:
            return int(status.get("restartCount", 0))
    return 0


def scheduler_leader(api: k8s.ApiClient) -> str:
    """The pod whose kube-scheduler holds the Lease (its identity is `<pod name>_<uuid>`)."""
    lease = read(api, "coordination.k8s.io/v1", "Lease", SCHEDULER_LEASE, NS) or {}
    holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
    return holder.split("_", 1)[0]


def ready_pod(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def ctr(real: devcluster.DevCluster, *args: str) -> str:
    paths = real_node.NodePaths(real.state.state_dir / "node")
    return subprocess.run(
        ["ctr", f"--address={paths.socket}", "--namespace=k8s.io", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def containers(real: devcluster.DevCluster) -> list[dict[str, Any]]:
    """The runtime's view of lahar-system's running containers: labels and OCI spec."""
    found = []
    for line in ctr(real, "containers", "ls", "-q").split():
        info = json.loads(ctr(real, "containers", "info", line))
        labels = info.get("Labels") or {}
        if labels.get("io.kubernetes.pod.namespace") != NS:
            continue
        if labels.get("io.cri-containerd.kind") != "container":
            continue
        found.append(info)
    return found


def task_pid(real: devcluster.DevCluster, pod: str, container: str) -> int:
    """The host pid of `container` of `pod` (running), from the runtime."""
    for info in containers(real):
        labels = info["Labels"]
        if labels["io.kubernetes.pod.name"] == pod and labels["io.kubernetes.container.name"] == (
            container
        ):
            for row in ctr(real, "tasks", "ls").splitlines()[1:]:
                task, pid, state = row.split()
                if task == info["ID"] and state == "RUNNING":
                    return int(pid)
    raise AssertionError(f"no running container {container} in pod {pod}")


def in_pod(real: devcluster.DevCluster, pod: str, container: str, code: str) -> str:
    """Run Python `code` in a container of lahar-system (through the kubelet: exec)."""
    result = kubectl(real, "-n", NS, "exec", pod, "-c", container, "--", "python3", "-c", code)
    return result.stdout.strip()


def both_ready(api: k8s.ApiClient) -> None:
    """Until the scheduler Deployment has its two pods, both Ready, and one leads."""

    def ready() -> bool:
        pods = lahar_pods(api, "scheduler")
        names = {p["metadata"]["name"] for p in pods}
        return (
            len(pods) == 2
            and all(ready_pod(p) and not p["metadata"].get("deletionTimestamp") for p in pods)
            and scheduler_leader(api) in names
        )

    wait_until(ready, timeout=180, what="both scheduler pods Ready, one leading")


def gang(api: k8s.ApiClient, namespace: str, name: str, size: int = 3) -> list[str]:
    """A Volcano PodGroup and its `size` pods of 1 cpu for Lahar's scheduler."""
    apply_object(api, make_group(name).ns(namespace).min_member(size).build())
    names = [f"{name}-{i}" for i in range(size)]
    for member in names:
        apply_object(
            api, make_pod(member).ns(namespace).scheduler("lahar").cpu("1").group(name).build()
        )
    return names


def bound_whole(api: k8s.ApiClient, namespace: str, names: list[str], timeout: float) -> float:
    """Seconds until every pod of `names` is bound (a gang: all of them or none)."""
    started = time.monotonic()

    def bound() -> bool:
        pods = {
            p["metadata"]["name"]: p for p in list_objects(api, "v1", "Pod", namespace=namespace)
        }
        return all((pods.get(n) or {}).get("spec", {}).get("nodeName") for n in names)

    wait_until(bound, timeout=timeout, what=f"gang {names} bound", interval=0.2)
    return time.monotonic() - started


def another_leads_then_places(
    api: k8s.ApiClient, namespace: str, leader: str, started: float, name: str
) -> tuple[float, float]:
    """Seconds from `started` until another pod's kube-scheduler holds the Lease, then until a
    new gang `name` is bound whole (never partly: checked all along)."""
    wait_until(
        lambda: scheduler_leader(api) not in ("", leader),
        timeout=90,
        what=f"another kube-scheduler than {leader}'s to take the Lease",
        interval=0.2,
    )
    took = time.monotonic() - started
    with BindTimeline(api, namespace) as timeline:
        placed = bound_whole(api, namespace, gang(api, namespace, name), 60)
    assert timeline.partial() == []
    return took, placed


@pytest.fixture
def workspace(rapi: k8s.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    apply_object(rapi, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_until(
        lambda: list_objects(rapi, "v1", "ServiceAccount", namespace=name),
        timeout=60,
        what=f"namespace {name}'s default ServiceAccount",
    )
    yield name
    delete(rapi, "v1", "Namespace", name)


def test_the_readme_says_what_this_test_runs() -> None:
    readme = (REPO / "README.md").read_text()
    assert README_OVERLAY in readme
    assert f"{README_CRDS}\n{README_APPLY}\n" in readme
    assert README_ROLLOUT in readme
    assert all(f"`{line}" in readme for line in README_REMOVE_WORK)
    assert f"{HELM_NAMESPACE}\n{HELM_INSTALL}\n{README_ROLLOUT}\n" in readme


def test_every_deployment_rolls_out_in_real_pods_standbys_ready(
    installed: dict[str, float], rapi: k8s.ApiClient
) -> None:
    for name in DEPLOYMENTS:
        deployment = read(rapi, "apps/v1", "Deployment", name, NS) or {}
        status = deployment.get("status") or {}
        assert status.get("readyReplicas") == deployment["spec"]["replicas"] == 2, name
    pods = list_objects(rapi, "v1", "Pod", namespace=NS)
    assert len(pods) == 6
    for pod in pods:
        assert pod["spec"]["nodeName"] == real_node.NODE_NAME
        assert ready_pod(pod), pod["metadata"]["name"]
    assert scheduler_leader(rapi) in {p["metadata"]["name"] for p in lahar_pods(rapi, "scheduler")}


def test_the_image_answers_lahar_version_as_a_non_root_user(
    installed: dict[str, float], real: devcluster.DevCluster, rapi: k8s.ApiClient
) -> None:
    pod = lahar_pods(rapi, "controller")[0]["metadata"]["name"]
    version = kubectl(real, "-n", NS, "exec", pod, "--", "lahar", "--version").stdout
    assert version.strip() == f"lahar {extender.__version__}"
    assert in_pod(real, pod, "controller", "import os; print(os.getuid(), os.getgid())") == (
        "65532 65532"
    )


def test_security_context_holds_in_the_runtime(
    installed: dict[str, float], real: devcluster.DevCluster
) -> None:
    """Read from containerd, not from the API: what runc was told to run."""
    seen = set()
    for info in containers(real):
        spec = info["Spec"]
        name = info["Labels"]["io.kubernetes.container.name"]
        seen.add(name)
        process = spec["process"]
        assert process["user"]["uid"] == 65532, name
        assert process["user"]["gid"] == 65532, name
        assert process.get("noNewPrivileges") is True, name
        assert not (process.get("capabilities") or {}).get("effective"), name
        assert not (process.get("capabilities") or {}).get("bounding"), name
        assert spec["root"].get("readonly") is True, name
        assert spec["linux"].get("seccomp", {}).get("defaultAction") == "SCMP_ACT_ERRNO", name
    assert seen == {"kube-scheduler", "extender", "controller", "webhook"}


def test_the_extender_verbs_port_is_not_reachable_from_another_pod(
    installed: dict[str, float], real: devcluster.DevCluster, rapi: k8s.ApiClient
) -> None:
    target = lahar_pods(rapi, "scheduler")[0]["status"]["podIP"]
    caller = lahar_pods(rapi, "webhook")[0]["metadata"]["name"]
    code = (
        "import socket\n"
        "for port in (8888, 8889):\n"
        "    s = socket.socket(); s.settimeout(3)\n"
        f"    print(port, s.connect_ex(('{target}', port)))\n"
    )
    answers = dict(line.split() for line in in_pod(real, caller, "webhook", code).splitlines())
    assert answers["8889"] == "0"  # the probes port answers: the pod network works
    assert answers["8888"] != "0"  # the verbs port (loopback only) does not


REFUSED = {  # component -> container, and a call its RBAC does not allow
    "scheduler": ("extender", "CoreV1Api(c).delete_namespace('kube-system')"),
    "controller": ("controller", "CoreV1Api(c).delete_node('lahar-node')"),
    "webhook": (
        "webhook",
        "CoreV1Api(c).create_namespaced_config_map('lahar-system', {'metadata': {'name': 'x'}})",
    ),
}


@pytest.mark.parametrize("component", sorted(REFUSED))
def test_each_component_token_does_only_what_its_rbac_says(
    installed: dict[str, float], real: devcluster.DevCluster, rapi: k8s.ApiClient, component: str
) -> None:
    container, call = REFUSED[component]
    pod = lahar_pods(rapi, component)[0]["metadata"]["name"]
    code = (
        "from kubernetes import client, config\n"
        "from kubernetes.client import CoreV1Api\n"
        "from kubernetes.client.exceptions import ApiException\n"
        "config.load_incluster_config(); c = client.ApiClient()\n"
        "try:\n"
        f"    {call}\n"
        "    print('allowed')\n"
        "except ApiException as e:\n"
        "    print(e.status)\n"
    )
    assert in_pod(real, pod, container, code) == "403"


def test_the_tensorflow_example_runs_to_completed_and_explain_answers(
    installed: dict[str, float], real: devcluster.DevCluster, rapi: k8s.ApiClient, workspace: str
) -> None:
    """`examples/tf-dist-mnist.yaml`, unchanged, through the in-pod components."""
    tf = "tensorflow-benchmark"
    with BindTimeline(rapi, workspace) as timeline:
        kubectl(real, "-n", workspace, "apply", "-f", str(REPO / "examples" / "tf-dist-mnist.yaml"))
        made = running(rapi, workspace, tf, 3)
    assert timeline.partial() == []
    assert all(p["spec"]["nodeName"] != real_node.NODE_NAME for p in made.values())
    wait_job(rapi, workspace, tf, "Running", timeout=120)
    explained = subprocess.run(
        [str(REPO / ".venv" / "bin" / "lahar"), "explain", tf, "-n", workspace],
        env={**os.environ, "KUBECONFIG": str(real.kubeconfig)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert tf in explained and "Running" in explained
    finish(rapi, workspace, [f"{tf}-worker-0", f"{tf}-worker-1"])
    wait_job(rapi, workspace, tf, "Completed", timeout=120)
    # Nothing so far was a reason for a leader to step down: no kube-scheduler restarted.
    assert [restarts(p, "kube-scheduler") for p in lahar_pods(rapi, "scheduler")] == [0, 0]


def test_every_container_stays_well_inside_its_memory_limit(
    installed: dict[str, float], real: devcluster.DevCluster
) -> None:
    """The peak memory of each container so far (the TensorFlow example included), read from
    its cgroup, against the limit runc was given."""
    peaks = {}
    for info in containers(real):
        labels = info["Labels"]
        name = f"{labels['io.kubernetes.pod.name']}/{labels['io.kubernetes.container.name']}"
        limit = info["Spec"]["linux"]["resources"]["memory"]["limit"]
        found = list(
            Path("/sys/fs/cgroup/memory").glob(
                f"{real_node.CGROUP_ROOT}/kubepods/**/pod{labels['io.kubernetes.pod.uid']}/"
                f"{info['ID']}/memory.max_usage_in_bytes"
            )
        )
        assert len(found) == 1, f"no memory cgroup for {name}"
        (usage,) = found
        peak = int(usage.read_text())
        peaks[name] = (peak, limit)
        assert peak < 0.6 * limit, f"{name}: peak {peak / 2**20:.0f} MiB of {limit / 2**20:.0f}"
    shown = ", ".join(f"{n} {p / 2**20:.0f}/{lim / 2**20:.0f} MiB" for n, (p, lim) in peaks.items())
    print(f"\nmeasured: peak memory / limit: {shown}")


def test_the_leading_scheduler_pod_deleted_the_standby_leads_and_places_a_gang_whole(
    installed: dict[str, float], rapi: k8s.ApiClient, workspace: str
) -> None:
    leader = scheduler_leader(rapi)
    started = time.monotonic()
    delete(rapi, "v1", "Pod", leader, NS)
    took_lease, placed = another_leads_then_places(rapi, workspace, leader, started, "after-delete")
    print(
        f"\nmeasured: leader pod deleted: Lease taken in {took_lease:.1f} s, a new gang bound "
        f"whole {placed:.1f} s later"
    )
    assert took_lease < 30


def test_the_leading_extender_killed_restarts_and_no_gang_is_partly_bound(
    installed: dict[str, float], real: devcluster.DevCluster, rapi: k8s.ApiClient, workspace: str
) -> None:
    both_ready(rapi)
    leader = scheduler_leader(rapi)
    before = restarts(read(rapi, "v1", "Pod", leader, NS) or {}, "extender")
    started = time.monotonic()
    os.kill(task_pid(real, leader, "extender"), signal.SIGKILL)
    with BindTimeline(rapi, workspace) as timeline:
        names = gang(rapi, workspace, "during-restart")
        placed = bound_whole(rapi, workspace, names, 90)
    assert timeline.partial() == []
    wait_until(
        lambda: restarts(read(rapi, "v1", "Pod", leader, NS) or {}, "extender") == before + 1,
        timeout=30,
        what=f"the kubelet to report the extender of {leader} restarted once",
    )
    print(
        f"\nmeasured: leading extender killed: a gang submitted then bound whole {placed:.1f} s "
        f"after the kill ({time.monotonic() - started:.1f} s in all)"
    )


def test_an_extender_unable_to_serve_makes_its_leader_step_down(
    installed: dict[str, float], real: devcluster.DevCluster, rapi: k8s.ApiClient, workspace: str
) -> None:
    """A hung extender (stopped: alive, answering nothing) beside the leading kube-scheduler:
    the ready standby's extender evicts that pod, and the standby's kube-scheduler leads."""
    both_ready(rapi)
    leader = scheduler_leader(rapi)
    pid = task_pid(real, leader, "extender")
    started = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        stepped_down, placed = another_leads_then_places(
            rapi, workspace, leader, started, "after-hang"
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    old = read(rapi, "v1", "Pod", leader, NS)
    assert old is None or old["metadata"].get("deletionTimestamp"), "the hung leader stayed"
    print(
        f"\nmeasured: leading extender hung: leader stepped down after {stepped_down:.1f} s, "
        f"a new gang bound whole {placed:.1f} s later"
    )
    assert stepped_down < 60


def ca_bundles(api: k8s.ApiClient) -> set[str]:
    """The caBundles of Lahar's webhook configurations."""
    found = set()
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        config = read(api, "admissionregistration.k8s.io/v1", kind, "lahar-webhook") or {}
        found |= {hook["clientConfig"].get("caBundle", "") for hook in config.get("webhooks", [])}
    return found


def job_body(name: str, namespace: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((REPO / "examples" / "tf-dist-mnist.yaml").read_text())
    body["metadata"] = {"name": name, "namespace": namespace}
    return body


def test_webhook_pods_deleted_jobs_refused_naming_it_then_accepted(
    installed: dict[str, float], rapi: k8s.ApiClient, workspace: str
) -> None:
    for pod in lahar_pods(rapi, "webhook"):
        delete(rapi, "v1", "Pod", pod["metadata"]["name"], NS)
    started = time.monotonic()
    refusals: list[str] = []

    def accepted() -> bool:
        try:
            apply_object(rapi, job_body(f"j{len(refusals)}", workspace), dry_run=True)
        except KubeError as error:
            refusals.append(str(error))
            return False
        return True

    # The old pods serve until the kubelet stops them and kube-proxy drops their endpoints.
    wait_until(lambda: not accepted(), timeout=60, what="a Job refused", interval=0.2)
    wait_until(accepted, timeout=120, what="a Job accepted again", interval=0.5)
    took = time.monotonic() - started
    print(f"\nmeasured: both webhook pods deleted: Jobs refused for {took:.1f} s")
    assert "lahar-webhook" in refusals[0]


def test_webhook_certificate_secret_deleted_is_regenerated_and_republished(
    installed: dict[str, float], rapi: k8s.ApiClient, workspace: str
) -> None:
    """Both replicas in their pods notice, one writes new certificates, both serve them."""
    wait_until(
        lambda: (
            all(ready_pod(p) for p in lahar_pods(rapi, "webhook"))
            and len(lahar_pods(rapi, "webhook")) == 2
        ),
        timeout=120,
        what="both webhook pods Ready",
    )
    before = (read(rapi, "v1", "Secret", "lahar-webhook-tls", NS) or {}).get("data") or {}
    published = ca_bundles(rapi)
    started = time.monotonic()
    delete(rapi, "v1", "Secret", "lahar-webhook-tls", NS)
    refused = 0

    def accepted() -> bool:
        nonlocal refused
        try:
            apply_object(rapi, job_body(f"c{refused}", workspace), dry_run=True)
        except KubeError:
            refused += 1
            return False
        return True

    def republished() -> bool:
        data = (read(rapi, "v1", "Secret", "lahar-webhook-tls", NS) or {}).get("data") or {}
        if not data or data == before:
            return False
        bundles = ca_bundles(rapi)
        return len(bundles) == 1 and bundles != published

    wait_until(republished, timeout=60, what="new certificates and caBundle", interval=0.2)
    wait_until(accepted, timeout=60, what="a Job accepted with the new certificate", interval=0.2)
    took = time.monotonic() - started
    print(f"\nmeasured: webhook Secret deleted: new certificate served in {took:.1f} s")
    assert took < 30


def test_the_readme_uninstall_keeps_the_work_and_removing_the_work_leaves_nothing(
    installed: dict[str, float],
    real: devcluster.DevCluster,
    rapi: k8s.ApiClient,
    checkout: Path,
    workspace: str,
) -> None:
    """Last: a running Job, a PodGroup and a Queue; the README's uninstall keeps all of them (the
    CRDs stay); then the README's removal of the work too (Jobs, Lahar, the CRDs) leaves nothing."""
    tf = "tensorflow-benchmark"
    kubectl(real, "-n", workspace, "apply", "-f", str(REPO / "examples" / "tf-dist-mnist.yaml"))
    running(rapi, workspace, tf, 3)
    for body in (
        make_queue("kept").build(),
        make_group("kept").ns(workspace).min_member(2).build(),
    ):
        # (the webhook replicas may still be taking up the certificate the test before renewed)
        wait_until(lambda body=body: _applied(rapi, body), timeout=120, what="the object admitted")
    kept = {
        (api_version, kind, name, namespace): (read(rapi, api_version, kind, name, namespace) or {})
        .get("metadata", {})
        .get("uid")
        for api_version, kind, name, namespace in (
            ("batch.volcano.sh/v1alpha1", "Job", tf, workspace),
            ("scheduling.volcano.sh/v1beta1", "PodGroup", "kept", workspace),
            ("scheduling.volcano.sh/v1beta1", "Queue", "kept", None),
            ("scheduling.volcano.sh/v1beta1", "Queue", "default", None),
        )
    }
    pods = {p["metadata"]["uid"] for p in list_objects(rapi, "v1", "Pod", namespace=workspace)}
    assert None not in kept.values() and len(pods) == 3
    started = time.monotonic()
    kubectl(real, *README_UNINSTALL.split()[1:], "--timeout=5m", cwd=checkout)
    took = time.monotonic() - started

    def lahar_gone() -> bool:
        hooks = [
            read(rapi, "admissionregistration.k8s.io/v1", kind, "lahar-webhook")
            for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        ]
        return read(rapi, "v1", "Namespace", NS) is None and hooks == [None, None]

    wait_until(lahar_gone, timeout=120, what="Lahar removed", interval=0.5)
    print(f"\nmeasured: the README's uninstall took {took:.1f} s")
    for (api_version, kind, name, namespace), uid in kept.items():
        found = read(rapi, api_version, kind, name, namespace) or {}
        assert found.get("metadata", {}).get("uid") == uid, f"{kind} {name} kept"
    assert {p["metadata"]["uid"] for p in list_objects(rapi, "v1", "Pod", namespace=workspace)} == (
        pods
    )

    for line in README_REMOVE_WORK:
        extra = ["--ignore-not-found"] if line == README_UNINSTALL else []  # (already removed)
        kubectl(real, *line.split()[1:], *extra, "--timeout=5m", cwd=checkout)

    def gone() -> bool:
        crds = list_objects(rapi, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
        return not [c for c in crds if "volcano.sh" in c["metadata"]["name"]] and not (
            list_objects(rapi, "v1", "Pod", namespace=workspace)
        )

    wait_until(gone, timeout=120, what="nothing of the work left", interval=0.5)


def test_the_chart_readme_says_what_this_test_runs() -> None:
    readme = CHART_README.read_text()
    assert f"{HELM_NAMESPACE}\n{HELM_INSTALL}\n{README_ROLLOUT}\n" in readme
    assert f"{HELM_UNINSTALL}\n" in readme


def helm(cluster: devcluster.DevCluster, *args: str) -> subprocess.CompletedProcess[str]:
    binary = ensure_tool("helm") / "helm"
    result = subprocess.run(
        [str(binary), f"--kubeconfig={cluster.kubeconfig}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, f"helm {' '.join(args)}: {result.stderr.strip()}"
    return result


def test_the_chart_installs_as_its_readme_says_and_uninstalls_keeping_the_crds(
    real: devcluster.DevCluster, rapi: k8s.ApiClient, workspace: str
) -> None:
    """Last, on the cluster the uninstall test left bare (no Lahar, no CRDs): the chart's README
    install (its CRDs from crds/, the namespace taken over and labelled: Pod Security restricted
    enforced), every Deployment rolled out in real pods on the real node, the webhook answering;
    `helm uninstall` removes Lahar and keeps the CRDs and the work."""
    started = time.monotonic()
    # The README's `kubectl create namespace`, as the dev cluster makes it for the real node (its
    # pods placed there, not on KWOK's nodes); the chart takes it over and labels it.
    wait_until(
        lambda: (
            (read(rapi, "v1", "Namespace", NS) or {}).get("status", {}).get("phase")
            != "Terminating"
        ),
        timeout=120,
        what=f"namespace {NS} not terminating",
    )
    apply_object(rapi, real_node.namespace_for_node())
    installed = helm(real, *HELM_INSTALL.replace(*THE_IMAGE).split()[1:])
    assert README_ROLLOUT in installed.stdout  # (the chart's notes say how to wait)
    kubectl(real, *README_ROLLOUT.split()[1:], "--timeout=5m")
    took = time.monotonic() - started
    print(f"\nmeasured: helm install to every Deployment rolled out {took:.1f} s")
    labels = (read(rapi, "v1", "Namespace", NS) or {})["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    for name in DEPLOYMENTS:
        status = (read(rapi, "apps/v1", "Deployment", name, NS) or {}).get("status") or {}
        assert status.get("readyReplicas") == 2, name
    pods = list_objects(rapi, "v1", "Pod", namespace=NS)
    assert len(pods) == 6 and all(p["spec"]["nodeName"] == real_node.NODE_NAME for p in pods)
    crds = {
        c["metadata"]["name"]
        for c in list_objects(rapi, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
    }
    chart_crds = {
        doc["metadata"]["name"]
        for path in (REPO / "charts" / "lahar" / "crds").glob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    }
    assert chart_crds <= crds
    # The webhook in the chart's pods admits a Job (once its certificate is published).
    wait_until(
        lambda: _applied(rapi, job_body("helm", workspace)), timeout=120, what="a Job admitted"
    )

    helm(real, *HELM_UNINSTALL.split()[1:])

    def lahar_gone() -> bool:
        hooks = [
            read(rapi, "admissionregistration.k8s.io/v1", kind, "lahar-webhook")
            for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        ]
        return read(rapi, "v1", "Namespace", NS) is None and hooks == [None, None]

    wait_until(lahar_gone, timeout=120, what="Lahar removed", interval=0.5)
    kept = {
        c["metadata"]["name"]
        for c in list_objects(rapi, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
    }
    assert chart_crds <= kept
    assert read(rapi, "batch.volcano.sh/v1alpha1", "Job", "helm", workspace) is not None


def _applied(api: k8s.ApiClient, body: dict[str, Any]) -> bool:
    try:
        apply_object(api, body)
    except KubeError:
        return False
    return True
