"""The cluster `benchmarks/e2e.py` measures on: one dev cluster (real kube-apiserver, etcd,
kube-controller-manager, KWOK playing the kubelets of N fake nodes) running three schedulers side
by side, each answering its own schedulerName, all with the same client QPS and burst:

- the stock kube-scheduler alone (`default-scheduler`);
- the stock kube-scheduler calling Lahar's extender (`lahar`, with Lahar's policy files), beside
  Lahar's Job controller and webhook;
- the peer: kube-scheduler built from `sigs.k8s.io/scheduler-plugins` (the version matching the
  control plane) with its Coscheduling gang plugin (`coscheduling`), its PodGroup CRD installed
  from the same module.

And what the benchmarks read of it: each scheduler stopped and started again (a backlog), the CPU
each process has spent (`Usage`, from /proc), the schedulers' scheduling attempts, the API
server's requests by verb and resource and, with `audit`, by client component (`e2e_audit`), and
whether Lahar's Job controller has nothing left to do.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from e2e_audit import AuditLog
from kubernetes import client as k8s
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender import devcluster
from extender.devcluster import child_processes, configs
from extender.devcluster.cluster import METRICS_OPEN
from extender.devcluster.paths import policy_dir
from extender.devcluster.ports import free_ports
from extender.kube import apply_object, connect, read, wait_established, wait_until
from extender.kube.raw import send

PEER_MODULE = "sigs.k8s.io/scheduler-plugins@v0.35.4-devel"
PEER = "coscheduling"  # the peer's schedulerName
MANAGED = "lahar.io/gang"  # the extended resource of the experiment `managed_only`
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
TICK = 100  # clock ticks per second in /proc/<pid>/stat (USER_HZ on Linux)
CLIENT = "benchmark client"  # this process, among the cluster's in the CPU accounting


@dataclass(frozen=True)
class Usage:
    """The CPU seconds each process of the cluster (and the benchmark) had spent, by name, and
    the machine's busy and total clock ticks (all cores), at one moment."""

    cpu: dict[str, float]
    busy: int
    ticks: int

    def since(self, before: Usage) -> Usage:
        """What was spent from `before` to this moment."""
        return Usage(
            {name: spent - before.cpu.get(name, 0.0) for name, spent in self.cpu.items()},
            self.busy - before.busy,
            self.ticks - before.ticks,
        )

    @property
    def machine_cpu(self) -> float:
        """CPU seconds all cores spent busy."""
        return self.busy / TICK

    @property
    def machine_busy(self) -> float:
        """The fraction of all cores' time spent busy (near 1: the run is bound by CPU)."""
        return self.busy / self.ticks if self.ticks else 0.0


def process_cpu(pid: int) -> tuple[float, float]:
    """(CPU seconds so far, resident MiB now) of process `pid`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return cpu, int(line.split()[1]) / 1024
    return cpu, 0.0


def machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores so far (/proc/stat)."""
    ticks = [int(t) for t in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return sum(ticks[:8]) - idle, sum(ticks[:8])


def api_call(
    api: k8s.ApiClient,
    method: str,
    path: str,
    *,
    query: list[tuple[str, str | int]] | None = None,
    body: dict[str, Any] | None = None,
) -> bytes:
    """One request to the API server, its answer's body (an error status raises)."""
    answer: Any = send(api, method, path, query=query or [], body=body)
    return bytes(answer.read())


@dataclass
class BenchCluster:
    cluster: devcluster.DevCluster
    peer: subprocess.Popen[bytes] | None
    peer_argv: list[str] | None = None
    peer_log: Path | None = None
    audit: AuditLog | None = None  # the API server's, when it keeps one

    def process_id(self, name: str) -> int:
        return next(p.pid for p in self.cluster.state.processes if p.name == name)

    def processes(self) -> dict[str, int]:
        """Every process of the cluster by name (the peer as `coscheduling`), for CPU accounting."""
        running = {p.name: p.pid for p in self.cluster.state.processes}
        if self.peer is not None:
            running[PEER] = self.peer.pid
        return running

    def usage(self) -> Usage:
        """What every process of the cluster and the benchmark's own have spent so far."""
        processes = {**self.processes(), CLIENT: os.getpid()}
        busy, ticks = machine_ticks()
        return Usage({name: process_cpu(pid)[0] for name, pid in processes.items()}, busy, ticks)

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
            _wait_healthy_url(url, partial(_exited, record), name)

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
                requests[f"{labels['verb']} {resource}"] += int(sample.value)
        return requests

    def controller_work(self) -> tuple[float, float]:
        """(Jobs queued, reconciles done so far) of Lahar's Job controller: it has nothing
        left to do when nothing is queued and the count stands still."""
        port = self.cluster.state.ports["lahar-controller"]
        queued = done = 0.0
        for family in self._metrics(f"http://127.0.0.1:{port}/metrics"):
            for sample in family.samples:
                if sample.name == "lahar_controller_queue_depth":
                    queued += sample.value
                elif sample.name == "lahar_controller_reconciles_total":
                    done += sample.value
        return queued, done

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
    managed_only: bool = False,
    audit: bool = False,
) -> BenchCluster:
    """The cluster in `state_dir`, with N fake nodes, every scheduler's client at `qps`, the
    peer when asked, and with `audit` the API server keeping an audit log (`e2e_audit`)."""
    binaries = devcluster.ensure_binaries(quiet=True, peer=peer)
    state_dir.mkdir(parents=True, exist_ok=True)
    log = AuditLog(state_dir) if audit else None
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
    if managed_only:  # an experiment: the extender called only for pods asking for MANAGED
        managed = [{"name": MANAGED, "ignoredByScheduler": True}]
        wired["extenders"] = [{**one, "managedResources": managed} for one in wired["extenders"]]
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
        extra_apiserver_args=log.flags() if log is not None else (),
    )
    cluster = devcluster.up(options, binaries)
    if ungated:
        _without_pod_gate(cluster)
    if not peer:
        return BenchCluster(cluster, None, audit=log)
    assert binaries.coscheduling_scheduler is not None
    try:
        argv, log_file = _peer_command(cluster, binaries.coscheduling_scheduler, state_dir, qps)
        peer_process = _spawn_peer(argv, log_file)
    except Exception:
        cluster.down()
        raise
    return BenchCluster(cluster, peer_process, argv, log_file, audit=log)


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
        api_call(api, "PUT", path, body=hooks)


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


def _exited(record: child_processes.ProcessRecord) -> bool:
    return not child_processes.is_running(record)


def _tls(argv: list[str]) -> bool:
    return any(a.startswith("--tls-cert-file=") for a in argv)
