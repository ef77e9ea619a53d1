"""The cluster `benchmarks/e2e.py` measures on: one dev cluster (real kube-apiserver, etcd,
kube-controller-manager, KWOK playing the kubelets of N fake nodes) running three schedulers side
by side, each answering its own schedulerName, all with the same client QPS and burst:

- the stock kube-scheduler alone (`default-scheduler`);
- the stock kube-scheduler calling Lahar's extender (`lahar`, with Lahar's policy files);
- the peer: kube-scheduler built from `sigs.k8s.io/scheduler-plugins` (the version matching the
  control plane) with its Coscheduling gang plugin (`coscheduling`), its PodGroup CRD installed
  from the same module.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender import devcluster
from extender.devcluster import configs, process
from extender.devcluster.cluster import METRICS_OPEN
from extender.devcluster.paths import policy_dir
from extender.devcluster.ports import free_ports
from extender.kube import apply_object, connect, read, wait_established, wait_until
from extender.kube.raw import send

PEER_MODULE = "sigs.k8s.io/scheduler-plugins@v0.35.4-devel"
PEER = "coscheduling"  # the peer's schedulerName
WEBHOOKS, POD_GATE = "lahar-webhook", "pod-gang-gate.lahar.dev"  # manifests/base/webhook.yaml
# The dev cluster's processes that schedule each schedulerName, and their ports' names.
# (started in this order, stopped in the other: the extender before the scheduler it serves)
SCHEDULER_PROCESSES = {
    "default-scheduler": ("kube-scheduler",),
    "lahar": ("lahar", "lahar-scheduler"),
}
PORTS = {"kube-scheduler": "scheduler", "lahar-scheduler": "lahar-scheduler", "lahar": "lahar"}
# The process that runs each schedulerName's scheduling loop (its /metrics has the attempts).
LOOPS = {"default-scheduler": "kube-scheduler", "lahar": "lahar-scheduler"}


@dataclass
class BenchCluster:
    cluster: devcluster.DevCluster
    peer: subprocess.Popen[bytes] | None
    peer_argv: list[str] | None = None
    peer_log: Path | None = None

    def process_id(self, name: str) -> int:
        return next(p.pid for p in self.cluster.state.processes if p.name == name)

    def processes(self) -> dict[str, int]:
        """Every process of the cluster by name (the peer as `coscheduling`), for CPU accounting."""
        running = {p.name: p.pid for p in self.cluster.state.processes}
        if self.peer is not None:
            running[PEER] = self.peer.pid
        return running

    def stop_scheduler(self, scheduler: str) -> None:
        """Stop the processes that schedule pods of `scheduler` (a schedulerName)."""
        if scheduler == PEER:
            assert self.peer is not None
            self.peer.terminate()
            self.peer.wait(timeout=30)
            return
        for name in reversed(SCHEDULER_PROCESSES[scheduler]):
            self.cluster.stop_component(name)

    def start_scheduler(self, scheduler: str) -> None:
        """Start them again with the same command lines, and wait until they answer."""
        if scheduler == PEER:
            assert self.peer_argv is not None
            assert self.peer_log is not None
            self.peer = _spawn_peer(self.peer_argv, self.peer_log)
            return
        for name in SCHEDULER_PROCESSES[scheduler]:
            record = self.cluster.start_component(name, die_with_parent=True)
            port = self.cluster.state.ports[PORTS[name]]
            scheme = "http" if name == "lahar" and not _tls(record.argv) else "https"
            path = "/readyz" if name == "lahar" else "/healthz"
            url = f"{scheme}://127.0.0.1:{port}{path}"
            _wait_healthy_url(url, lambda r=record: not process.is_running(r), name)

    def schedule_attempts(self, scheduler: str) -> float:
        """`scheduler_schedule_attempts_total` of the process scheduling `scheduler`, summed over
        results and profiles (it counts from the process's start)."""
        if scheduler == PEER:
            assert self.peer_argv is not None
            port = next(a.split("=", 1)[1] for a in self.peer_argv if "--secure-port=" in a)
        else:
            port = str(self.cluster.state.ports[PORTS[LOOPS[scheduler]]])
        return sum(
            sample.value
            for family in self._metrics(f"https://127.0.0.1:{port}/metrics")
            if family.name == "scheduler_schedule_attempts"
            for sample in family.samples
            if sample.name.endswith("_total")
        )

    def api_requests(self) -> Counter[str]:
        """The API server's requests so far (`apiserver_request_total`), by verb and resource:
        `PATCH pods`, `POST pods/binding`, `WATCH pods` (watches started), ..."""
        requests: Counter[str] = Counter()
        for family in self._metrics(f"{self.cluster.state.server}/metrics"):
            if family.name != "apiserver_request":
                continue
            for sample in family.samples:
                labels = sample.labels
                if not sample.name.endswith("_total"):
                    continue
                resource = labels.get("resource", "")
                if labels.get("subresource"):
                    resource += "/" + labels["subresource"]
                requests[f"{labels['verb']} {resource}"] += sample.value
        return requests

    def _metrics(self, url: str) -> list[Metric]:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed ports
        token = yaml.safe_load(self.cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
        headers = {"Authorization": f"Bearer {token}"}
        request = urllib.request.Request(url, headers=headers)  # noqa: S310
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:  # noqa: S310
            return list(text_string_to_metric_families(answer.read().decode()))

    def down(self) -> None:
        if self.peer is not None:
            self.peer.terminate()
            self.peer.wait(timeout=30)
        self.cluster.down()


def _client_connection(qps: int) -> dict[str, Any]:
    return {"qps": qps, "burst": 2 * qps}


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


def start(
    state_dir: Path,
    *,
    nodes: int,
    qps: int,
    peer: bool,
    service_form: bool = False,
    nodes_to_score: int | None = None,
    ungated: bool = False,
) -> BenchCluster:
    binaries = devcluster.ensure_binaries(quiet=True, peer=peer)
    state_dir.mkdir(parents=True, exist_ok=True)
    stock = _write(
        state_dir / "stock-scheduler.yaml",
        {**configs.default_scheduler_config(), "clientConnection": _client_connection(qps)},
    )
    policies = state_dir / "policy"
    policies.mkdir(exist_ok=True)
    shutil.copyfile(policy_dir() / "lahar.yaml", policies / "lahar.yaml")
    wired = configs.load_scheduler_config(policy_dir() / "kube-scheduler-config.yaml")
    wired["clientConnection"] = _client_connection(qps)
    if nodes_to_score is not None:  # an experiment: the policy leaves it to the scheduler
        wired["percentageOfNodesToScore"] = nodes_to_score
    _write(policies / "kube-scheduler-config.yaml", wired)
    options = devcluster.ClusterOptions(
        state_dir=state_dir / "cluster",
        scheduler_config=stock,
        nodes=nodes,
        node_cpu="32",
        node_memory="256Gi",
        ready_timeout=max(120.0, nodes * 0.6),
        die_with_parent=True,
        with_lahar=True,
        lahar_policy_dir=policies,
        extender_service=service_form,
    )
    cluster = devcluster.up(options, binaries)
    if ungated:
        _without_pod_gate(cluster)
    if not peer:
        return BenchCluster(cluster, None)
    assert binaries.coscheduling_scheduler is not None
    try:
        argv, log = _peer_command(cluster, binaries.coscheduling_scheduler, state_dir, qps)
        peer_process = _spawn_peer(argv, log)
    except Exception:
        cluster.down()
        raise
    return BenchCluster(cluster, peer_process, argv, log)


def _without_pod_gate(cluster: devcluster.DevCluster) -> None:
    """An experiment: the webhook no longer gates gang pods (its pod entry removed), as in a
    cluster where it is down or not installed; Lahar admits their gangs at filter time."""
    with connect(cluster.kubeconfig) as api:
        hooks = read(
            api, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", WEBHOOKS
        )
        assert hooks is not None, "the dev cluster installs Lahar's webhooks"
        hooks["webhooks"] = [h for h in hooks["webhooks"] if h["name"] != POD_GATE]
        path = f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{WEBHOOKS}"
        send(api, "PUT", path, body=hooks).read()


def _peer_source() -> Path:
    """The peer's module as the build downloaded it (its CRD is there)."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("no `go` on PATH: the peer's module cannot be found")
    download = [go, "mod", "download", "-json", PEER_MODULE]
    out = subprocess.run(download, capture_output=True, text=True, check=True).stdout
    return Path(json.loads(out)["Dir"])


def _peer_command(
    cluster: devcluster.DevCluster, binary: Path, state_dir: Path, qps: int
) -> tuple[list[str], Path]:
    """The peer's command line and log file (its CRD installed)."""
    crd = yaml.safe_load((_peer_source() / "manifests/coscheduling/crd.yaml").read_text())
    with connect(cluster.kubeconfig) as api:
        apply_object(api, crd)
        wait_established(api, [crd["metadata"]["name"]], 60)
    config = {
        **configs.default_scheduler_config(),
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(cluster.kubeconfig), **_client_connection(qps)},
        "profiles": [
            {
                "schedulerName": PEER,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}}
                ],
            }
        ],
    }
    path = _write(state_dir / "peer-scheduler.yaml", config)
    (port,) = free_ports(1)
    argv = [str(binary), f"--config={path}", "--bind-address=127.0.0.1", f"--secure-port={port}"]
    argv.append(METRICS_OPEN)
    return argv, state_dir / "peer-scheduler.log"


def _spawn_peer(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start the peer scheduler and wait until it answers /healthz."""
    child = subprocess.Popen(argv, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    port = next(a.split("=", 1)[1] for a in argv if a.startswith("--secure-port="))
    try:
        _wait_healthy_url(
            f"https://127.0.0.1:{port}/healthz",
            lambda: child.poll() is not None,
            f"the peer scheduler (log {log})",
        )
    except Exception:
        child.kill()
        raise
    return child


def _wait_healthy_url(url: str, exited: Callable[[], bool], what: str) -> None:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed ports

    def healthy() -> bool:
        if exited():
            raise RuntimeError(f"{what} exited during start")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as answer:  # noqa: S310
                return bool(answer.status == 200)
        except OSError:
            return False

    wait_until(healthy, timeout=120, what=f"{what} at {url}")


def _tls(argv: list[str]) -> bool:
    return any(a.startswith("--tls-cert-file=") for a in argv)
