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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender import devcluster
from extender.devcluster import configs
from extender.devcluster.paths import policy_dir
from extender.devcluster.ports import free_ports
from extender.kube import apply_object, connect, wait_established, wait_until

PEER_MODULE = "sigs.k8s.io/scheduler-plugins@v0.35.4-devel"
PEER = "coscheduling"  # the peer's schedulerName


@dataclass
class BenchCluster:
    cluster: devcluster.DevCluster
    peer: subprocess.Popen[bytes] | None

    def process_id(self, name: str) -> int:
        return next(p.pid for p in self.cluster.state.processes if p.name == name)

    def processes(self) -> dict[str, int]:
        """Every process of the cluster by name (the peer as `coscheduling`), for CPU accounting."""
        running = {p.name: p.pid for p in self.cluster.state.processes}
        if self.peer is not None:
            running[PEER] = self.peer.pid
        return running

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
    extender_tls: bool = True,
    nodes_to_score: int | None = None,
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
    if nodes_to_score is not None:  # Lahar's policy scores every node (100)
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
        extender_tls=extender_tls,
    )
    cluster = devcluster.up(options, binaries)
    if not peer:
        return BenchCluster(cluster, None)
    assert binaries.coscheduling_scheduler is not None
    try:
        process = _start_peer(cluster, binaries.coscheduling_scheduler, state_dir, qps)
    except Exception:
        cluster.down()
        raise
    return BenchCluster(cluster, process)


def _peer_source() -> Path:
    """The peer's module as the build downloaded it (its CRD is there)."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("no `go` on PATH: the peer's module cannot be found")
    download = [go, "mod", "download", "-json", PEER_MODULE]
    out = subprocess.run(download, capture_output=True, text=True, check=True).stdout
    return Path(json.loads(out)["Dir"])


def _start_peer(
    cluster: devcluster.DevCluster, binary: Path, state_dir: Path, qps: int
) -> subprocess.Popen[bytes]:
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
    log = (state_dir / "peer-scheduler.log").open("wb")
    process = subprocess.Popen(
        [str(binary), f"--config={path}", "--bind-address=127.0.0.1", f"--secure-port={port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_healthy(
            process, f"https://127.0.0.1:{port}/healthz", state_dir / "peer-scheduler.log"
        )
    except Exception:
        process.kill()
        raise
    return process


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # its self-signed port

    def healthy() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the peer scheduler exited during start; see {log}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as answer:  # noqa: S310
                return bool(answer.status == 200)
        except OSError:
            return False

    wait_until(healthy, timeout=120, what=f"the peer scheduler at {url}")
