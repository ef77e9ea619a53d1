"""End-to-end scheduling throughput on the real control plane: what Lahar costs the stock
kube-scheduler, and how its gang scheduling compares with scheduler-plugins' Coscheduling.

    .venv/bin/python benchmarks/e2e.py [--nodes 1000] [--pods 10000] [--gangs 8 64]
                                       [--no-peer] [--qps 500] [--workers 8] [--create-qps 1000]
                                       [--only a b c8 d8] [--profile DIR]
                                       [experiments: --service-form] [--nodes-to-score P]
                                       [--ungated] [--creator-gates]

One dev cluster (`e2e_cluster`: real kube-apiserver, etcd, kube-controller-manager, KWOK for N
fake nodes of 32 cpu) runs every scheduler side by side, Lahar as `manifests/` ships it (its
kube-scheduler with the extender beside it on loopback, the webhook gating gang pods, the policy
files of `policy/` unchanged); the experiments depart from that and say so in the report. Each run
creates M pause pods (100m cpu, 128Mi) in a namespace of its own at the same rate and from the
same client, then deletes them:

  (a) stock kube-scheduler alone, plain pods        (schedulerName default-scheduler)
  (b) stock kube-scheduler + Lahar, plain pods      (schedulerName lahar)
  (c) stock + Lahar, gangs of 8 and of 64           (Volcano PodGroups, minMember = gang size)
  (d) the peer, Coscheduling, the same gangs         (scheduler-plugins PodGroups)

Every scheduler's client has the same QPS and burst (`--qps`, burst twice that); Lahar's own
client (its binds) has no limiter. Printed per run: pods/s from the first create to the last bind,
p50/p99 of each pod's time from create to bound (as a watch sees it), the run's scheduler's
scheduling attempts per bound pod (`scheduler_schedule_attempts_total`: 1.00 when no pod is
tried twice), Lahar's CPU milliseconds per bound pod and its peak RSS, how busy the machine's
cores were (a run near 100% is bound by CPU, which every component shares), pods never bound
and gangs partly bound at the end; then the CPU milliseconds each bound pod cost each process of
the cluster, the API server's requests per bound pod by verb and resource, and the ratios (b)/(a)
and (c)/(d) per gang size.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e_cluster import PEER, BenchCluster, start
from kubernetes import client as k8s

from extender.api.scheduling import API_VERSION as VOLCANO
from extender.api.scheduling import GANG_GATE, GROUP_ANNOTATION
from extender.kube import apply_object, connect, read, wait_until
from extender.kube.raw import send
from extender.kube.watch import watch_lines

PEER_API = "scheduling.x-k8s.io/v1alpha1"
PEER_LABEL = "scheduling.x-k8s.io/pod-group"
TICK = 100  # clock ticks per second in /proc/<pid>/stat (USER_HZ on Linux)


@dataclass(frozen=True)
class Run:
    letter: str  # the scenario: a, b, c, d
    label: str
    scheduler: str
    gang: int = 0  # 0: plain pods

    @property
    def key(self) -> str:
        return f"{self.letter}{self.gang or ''}"


@dataclass
class Result:
    run: Run
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    lahar_cpu: float = 0.0
    lahar_peak_mib: float = 0.0
    machine_busy: float = 0.0  # the fraction of all cores' time spent busy during the run
    machine_cpu: float = 0.0  # CPU seconds all cores spent busy during the run
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per component in the run
    partial_gangs: int = 0
    attempts: float = 0.0  # the run's scheduler's scheduling attempts during the run
    requests: Counter[str] = field(default_factory=Counter)  # API server requests in the run

    @property
    def pods_per_second(self) -> float:
        if not self.bound:
            return 0.0
        return len(self.bound) / (max(self.bound.values()) - min(self.created.values()))

    def latency_ms(self, quantile: float) -> float:
        waits = sorted(self.bound[n] - self.created[n] for n in self.bound)
        if not waits:
            return float("nan")
        return waits[min(len(waits) - 1, int(len(waits) * quantile))] * 1000


def runs(gangs: list[int], peer: bool) -> list[Run]:
    chosen = [
        Run("a", "stock, plain pods", "default-scheduler"),
        Run("b", "stock+Lahar, plain pods", "lahar"),
    ]
    for size in gangs:
        chosen.append(Run("c", f"stock+Lahar, gangs of {size}", "lahar", size))
        if peer:
            chosen.append(Run("d", f"Coscheduling, gangs of {size}", PEER, size))
    return chosen


def pod_body(name: str, run: Run, group: str | None, *, gated: bool = False) -> dict[str, Any]:
    """A pause pod of `run` (in gang `group`; with `gated`, created behind Lahar's gate, as
    Lahar's Job controller creates its pods)."""
    metadata: dict[str, Any] = {"name": name, "labels": {"bench": "e2e"}}
    if group is not None and run.scheduler == PEER:
        metadata["labels"][PEER_LABEL] = group
    elif group is not None:
        metadata["annotations"] = {GROUP_ANNOTATION: group}
    container = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    spec: dict[str, Any] = {"schedulerName": run.scheduler, "containers": [container]}
    if gated and group is not None and run.scheduler != PEER:
        spec["schedulingGates"] = [{"name": GANG_GATE}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def group_body(name: str, namespace: str, run: Run) -> dict[str, Any]:
    api_version = PEER_API if run.scheduler == PEER else VOLCANO
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": run.gang},
    }


def _threads_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of `pid` so far, by thread id (py-spy names threads by it)."""
    spent = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        spent[int(task.name)] = (int(fields[11]) + int(fields[12])) / TICK
    return spent


def _proc(pid: int) -> tuple[float, float]:
    """(CPU seconds so far, resident MiB now) of process `pid`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return cpu, int(line.split()[1]) / 1024
    return cpu, 0.0


def _machine() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores so far (/proc/stat): whether a run is CPU-bound."""
    ticks = [int(t) for t in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return sum(ticks[:8]) - idle, sum(ticks[:8])


def _observe(kubeconfig: Path, namespace: str, version: str, result: Result, total: int) -> None:
    """Record when each pod is first seen bound, until all `total` are."""
    with connect(kubeconfig) as api:
        path = f"/api/v1/namespaces/{namespace}/pods"
        while len(result.bound) < total:
            for line in watch_lines(api, path, version, timeout_seconds=600):
                event = json.loads(line)
                pod = event["object"]
                version = pod["metadata"].get("resourceVersion", version)
                name = pod["metadata"].get("name")
                if (pod.get("spec") or {}).get("nodeName") and name not in result.bound:
                    result.bound[name] = time.monotonic()
                    if len(result.bound) >= total:
                        return


def _prepare(api: k8s.ApiClient, run: Run, namespace: str, groups: list[str]) -> str:
    """Create the run's namespace and PodGroups; the resourceVersion its pod watch starts from."""
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", namespace),
        timeout=60,
        what=f"namespace {namespace}",
    )
    for group in groups:
        apply_object(api, group_body(group, namespace, run))
    listing = send(api, "GET", f"/api/v1/namespaces/{namespace}/pods").read()
    return str(json.loads(listing)["metadata"]["resourceVersion"])


def measure(bench: BenchCluster, api: k8s.ApiClient, run: Run, args: argparse.Namespace) -> Result:
    result = Result(run)
    namespace = f"bench-{run.key}"
    pods = args.pods - args.pods % run.gang if run.gang else args.pods
    groups = [f"g{i:05d}" for i in range(pods // run.gang)] if run.gang else []
    names = [f"p{i:06d}" for i in range(pods)]
    version = _prepare(api, run, namespace, groups)
    lahar = bench.process_id("lahar")
    peak = _proc(lahar)[1]
    profiler = _profile(lahar, run, args.profile)
    threads_before = _threads_cpu(lahar)
    observer = threading.Thread(
        target=_observe,
        args=(bench.cluster.kubeconfig, namespace, version, result, pods),
        daemon=True,
    )
    observer.start()
    components = bench.processes()
    components["benchmark client"] = os.getpid()
    cpu_before = {name: _proc(pid)[0] for name, pid in components.items()}
    machine_before = _machine()
    attempts_before, requests_before = bench.schedule_attempts(run.scheduler), bench.api_requests()
    started = time.monotonic()
    path = f"/api/v1/namespaces/{namespace}/pods"

    def create(index: int) -> None:
        due = started + index / args.create_qps
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        group = groups[index // run.gang] if run.gang else None
        result.created[names[index]] = time.monotonic()
        body = pod_body(names[index], run, group, gated=args.creator_gates)
        send(api, "POST", path, body=body).read()

    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(create, range(pods)))
    deadline = time.monotonic() + args.timeout
    while observer.is_alive() and time.monotonic() < deadline:
        observer.join(timeout=0.5)
        peak = max(peak, _proc(lahar)[1])
    cpu_after, rss = _proc(lahar)
    result.lahar_cpu, result.lahar_peak_mib = cpu_after - cpu_before["lahar"], max(peak, rss)
    result.cpu = {name: _proc(pid)[0] - cpu_before[name] for name, pid in components.items()}
    busy, total = (after - before for after, before in zip(_machine(), machine_before, strict=True))
    result.machine_busy = busy / total if total else 0.0
    result.machine_cpu = busy / TICK
    result.attempts = bench.schedule_attempts(run.scheduler) - attempts_before
    result.requests = bench.api_requests() - requests_before
    if profiler is not None and args.profile is not None:
        _stop_profile(profiler, lahar, threads_before, args.profile / f"lahar-{run.key}")
    if run.gang:
        for index, _ in enumerate(groups):
            members = names[index * run.gang : (index + 1) * run.gang]
            placed = sum(1 for n in members if n in result.bound)
            result.partial_gangs += 0 < placed < run.gang
    return result


def _stop_profile(
    profiler: subprocess.Popen[bytes], pid: int, threads_before: dict[int, float], stem: Path
) -> None:
    """Stop py-spy and write each of Lahar's threads' CPU seconds in the run beside its profile."""
    profiler.send_signal(signal.SIGINT)  # py-spy writes its file on interrupt
    profiler.wait(timeout=60)
    spent = {tid: cpu - threads_before.get(tid, 0.0) for tid, cpu in _threads_cpu(pid).items()}
    lines = [f"{tid} {cpu:.2f}" for tid, cpu in sorted(spent.items(), key=lambda i: -i[1])]
    stem.with_name(stem.name + "-threads.txt").write_text("\n".join(lines) + "\n")


def _profile(
    pid: int, run: Run, folder: Path | None, suffix: str = ""
) -> subprocess.Popen[bytes] | None:
    """With --profile, py-spy samples Lahar's extender during the run (collapsed stacks: one
    line per stack with its sample count, for flamegraph tools or a quick sort)."""
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).with_name("py-spy")
    out = folder / f"lahar-{run.key}{suffix}.txt"
    command = [str(spy), "record", "-p", str(pid), "-r", "100", "-f", "raw", "--threads", "--gil"]
    command += ["-o", str(out)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def clean(api: k8s.ApiClient, run: Run, namespace: str | None = None) -> None:
    """Delete the run's namespace (`bench-<run>` unless named) and wait until its pods are gone,
    so the next run has the cluster to itself (a collection delete of 10,000 pods outlasts the
    API server's request timeout; the namespace controller deletes them in batches)."""
    namespace = namespace or f"bench-{run.key}"
    send(api, "DELETE", f"/api/v1/namespaces/{namespace}").read()
    try:
        wait_until(
            lambda: read(api, "v1", "Namespace", namespace) is None,
            timeout=900,
            what=f"namespace {namespace} to be deleted",
            interval=2.0,
        )
    except TimeoutError as error:
        print(f"warning: {error}; the next run shares the cluster with what is left", flush=True)


def report(results: list[Result], args: argparse.Namespace) -> None:
    form = "as shipped (manifests/: the extender beside kube-scheduler, loopback HTTP)"
    experiments = []
    if args.service_form:
        experiments.append("the standalone extender over mutual TLS (manifests/extender-service/)")
    if args.nodes_to_score is not None:
        experiments.append(f"percentageOfNodesToScore {args.nodes_to_score}")
    if args.ungated:
        experiments.append("gang pods created without Lahar's gate (the webhook's pod entry off)")
    if args.creator_gates:
        experiments.append("gang pods created with Lahar's gate by the benchmark, not the webhook")
    if experiments:
        form = "EXPERIMENT, not as shipped: " + "; ".join(experiments)
    print(
        f"\n{args.nodes} nodes, {args.pods} pods per run, scheduler client QPS {args.qps}; "
        f"Lahar {form}"
    )
    header = f"{'run':34} {'pods':>6} {'pods/s':>8} {'p50 ms':>9} {'p99 ms':>9}"
    print(
        f"{header} {'attempts/pod':>12} {'Lahar ms/pod':>12} {'Lahar MiB':>9} {'busy %':>6} "
        f"{'unbound':>7} {'partial':>7}"
    )
    for r in results:
        unbound = len(r.created) - len(r.bound)
        bound = max(1, len(r.bound))
        print(
            f"({r.run.letter}) {r.run.label:30} {len(r.created):6d} {r.pods_per_second:8.1f} "
            f"{r.latency_ms(0.5):9.0f} {r.latency_ms(0.99):9.0f} {r.attempts / bound:12.2f} "
            f"{1000 * r.lahar_cpu / bound:12.2f} {r.lahar_peak_mib:9.0f} "
            f"{r.machine_busy * 100:6.0f} {unbound:7d} {r.partial_gangs:7d}"
        )
    breakdown(results)
    requests(results)
    by = {
        r.run.label.split(",")[0][:1] + (str(r.run.gang) if r.run.gang else ""): r for r in results
    }
    if "a" in by and "b" in by:
        print(f"(b)/(a) pods/s: {by['b'].pods_per_second / by['a'].pods_per_second:.2f}")
    for size in args.gangs:
        c, d = by.get(f"c{size}"), by.get(f"d{size}")
        if c is not None and d is not None and d.pods_per_second:
            ratio = c.pods_per_second / d.pods_per_second
            print(f"(c)/(d) pods/s, gangs of {size}: {ratio:.2f}")


def breakdown(results: list[Result]) -> None:
    """CPU milliseconds per bound pod, by component and run: where each pod's cost goes on a
    machine whose cores every component shares (the schedulers not in a run still watch its pods).
    """
    if not results:
        return
    names = sorted({name for r in results for name in r.cpu}, key=lambda n: -results[0].cpu[n])
    print("\nCPU ms per bound pod, by component")
    print(f"{'component':24} " + " ".join(f"{'(' + r.run.key + ')':>8}" for r in results))

    def row(label: str, seconds: list[float]) -> None:
        cells = [1000 * s / max(1, len(r.bound)) for s, r in zip(seconds, results, strict=True)]
        print(f"{label:24} " + " ".join(f"{c:8.2f}" for c in cells))

    for name in names:
        row(name, [r.cpu.get(name, 0.0) for r in results])
    row("all listed", [sum(r.cpu.values()) for r in results])
    row("whole machine", [r.machine_cpu for r in results])


def requests(results: list[Result]) -> None:
    """The API server's requests per bound pod, by verb and resource, and run: what each pod
    costs the API server beyond its create and its binding."""
    if not results:
        return
    keys = sorted(
        {k for r in results for k in r.requests}, key=lambda k: -sum(r.requests[k] for r in results)
    )
    print("\nAPI server requests per bound pod (apiserver_request_total)")
    print(f"{'verb resource':24} " + " ".join(f"{'(' + r.run.key + ')':>8}" for r in results))
    for key in keys:
        cells = [r.requests[key] / max(1, len(r.bound)) for r in results]
        if max(cells) >= 0.005:
            print(f"{key:24} " + " ".join(f"{c:8.2f}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--gangs", type=int, nargs="*", default=[8, 64])
    parser.add_argument("--no-peer", action="store_true", help="skip (d), the Coscheduling peer")
    parser.add_argument("--qps", type=int, default=500, help="every scheduler's client QPS")
    parser.add_argument("--workers", type=int, default=8, help="threads creating pods")
    parser.add_argument("--create-qps", type=float, default=1000.0, help="pods created per s")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    parser.add_argument("--only", nargs="*", default=[], help="run only these (a, b, c8, d64, ...)")
    parser.add_argument(
        "--nodes-to-score",
        type=int,
        help="experiment: set percentageOfNodesToScore of Lahar's scheduler (as shipped: unset, "
        "the scheduler's adaptive sampling)",
    )
    parser.add_argument(
        "--service-form",
        action="store_true",
        help="experiment: the standalone extender over mutual TLS (manifests/extender-service/) "
        "instead of the extender beside kube-scheduler on loopback (as shipped)",
    )
    parser.add_argument(
        "--ungated",
        action="store_true",
        help="experiment: gang pods created without Lahar's gate (the webhook's pod entry "
        "removed, as when it is down): their gangs are admitted when the scheduler asks",
    )
    parser.add_argument(
        "--creator-gates",
        action="store_true",
        help="experiment: the benchmark creates gang pods with Lahar's gate itself (as Lahar's "
        "Job controller does), the webhook's pod entry removed",
    )
    parser.add_argument(
        "--profile", type=Path, help="folder for py-spy profiles of Lahar's extender, per run"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lahar-e2e-") as folder:
        started = time.monotonic()
        bench = start(
            Path(folder),
            nodes=args.nodes,
            qps=args.qps,
            peer=not args.no_peer,
            service_form=args.service_form,
            ungated=args.ungated or args.creator_gates,
            nodes_to_score=args.nodes_to_score,
        )
        print(f"cluster with {args.nodes} nodes up in {time.monotonic() - started:.0f} s")
        try:
            with connect(bench.cluster.kubeconfig) as api:
                results = []
                for run in runs(args.gangs, peer=not args.no_peer):
                    if args.only and run.key not in args.only:
                        continue
                    results.append(measure(bench, api, run, args))
                    r = results[-1]
                    print(f"({run.letter}) {run.label}: {r.pods_per_second:.1f} pods/s", flush=True)
                    clean(api, run)
        finally:
            bench.down()
    report(results, args)


if __name__ == "__main__":
    main()
