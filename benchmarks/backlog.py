"""Throughput under a backlog of gangs: every pod of N gangs exists before the scheduler starts.

    .venv/bin/python benchmarks/backlog.py [--nodes 100] [--gangs 8] [--backlog 100 500]
                                           [--runs lahar coscheduling] [--timeout 600]

What a user submitting a sweep does to a scheduler that was down, or restarted: on the dev cluster
of `e2e_cluster` (N fake nodes of 32 cpu, 100m pods, so everything fits many times over), for each
gang size, each backlog size and each scheduler, the scheduler is stopped, every PodGroup and every
pod of the backlog is created, and the scheduler is started again. Printed per run: pods bound per
second from the scheduler's start to the last bind, the seconds to the first and the last bind,
kube-scheduler's scheduling attempts per bound pod (`scheduler_schedule_attempts_total` of the
run's scheduler, which starts at 0 with the process), Lahar's CPU ms per bound pod, pods never
bound and gangs left partly bound. Liveness is the point: pods/s must not fall as the backlog grows.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e import TICK, Run, _machine, _observe, _prepare, _proc, _profile, clean, pod_body
from e2e_cluster import PEER, BenchCluster, start
from kubernetes import client as k8s

from extender.kube import connect
from extender.kube.raw import send


@dataclass
class Backlog:
    run: Run
    gangs: int
    started: float = 0.0
    bound: dict[str, float] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    attempts: float = 0.0
    lahar_cpu: float = 0.0
    partial_gangs: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per component in the run
    machine_cpu: float = 0.0

    @property
    def pods(self) -> int:
        return self.gangs * self.run.gang

    @property
    def pods_per_second(self) -> float:
        if not self.bound:
            return 0.0
        return len(self.bound) / (max(self.bound.values()) - self.started)


def measure(
    bench: BenchCluster, api: k8s.ApiClient, run: Run, gangs: int, args: argparse.Namespace
) -> Backlog:
    result = Backlog(run, gangs)
    namespace = f"bench-backlog-{run.key}-{gangs}"
    groups = [f"g{i:05d}" for i in range(gangs)]
    names = [f"p{i:06d}" for i in range(gangs * run.gang)]
    bench.stop_scheduler(run.scheduler)
    _prepare(api, run, namespace, groups)
    path = f"/api/v1/namespaces/{namespace}/pods"

    def create(index: int) -> None:
        result.created[names[index]] = time.monotonic()
        body = pod_body(names[index], run, groups[index // run.gang])
        send(api, "POST", path, body=body).read()

    began = time.monotonic()
    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(create, range(len(names))))
    print(f"  created {len(names)} pods in {time.monotonic() - began:.0f} s", flush=True)
    # The watch starts after the creations (nothing binds while the scheduler is down): from
    # before them, a backlog of thousands of pods outruns the API server's watch cache (410).
    listed = json.loads(send(api, "GET", f"{path}?limit=1").read())
    version = str(listed["metadata"]["resourceVersion"])
    observer = threading.Thread(
        target=_observe,
        args=(bench.cluster.kubeconfig, namespace, version, _Bound(result), len(names)),
        daemon=True,
    )
    observer.start()
    result.started = time.monotonic()
    bench.start_scheduler(run.scheduler)
    lahar = bench.process_id("lahar")  # (a new process when the run's scheduler is Lahar's)
    cpu_before = _proc(lahar)[0]
    components = bench.processes()
    components["benchmark client"] = os.getpid()
    before = {name: _proc(pid)[0] for name, pid in components.items()}
    machine_before = _machine()
    profiler = _profile(lahar, run, args.profile, suffix=f"-{gangs}")
    deadline = result.started + args.timeout
    while observer.is_alive() and time.monotonic() < deadline:
        observer.join(timeout=0.5)
    if profiler is not None:
        profiler.send_signal(signal.SIGINT)  # py-spy writes its file on interrupt
        profiler.wait(timeout=60)
    result.attempts = bench.schedule_attempts(run.scheduler)
    result.lahar_cpu = _proc(lahar)[0] - cpu_before
    result.cpu = {name: _proc(pid)[0] - before[name] for name, pid in components.items()}
    busy, _ = (after - b for after, b in zip(_machine(), machine_before, strict=True))
    result.machine_cpu = busy / TICK
    for index in range(gangs):
        members = names[index * run.gang : (index + 1) * run.gang]
        placed = sum(1 for n in members if n in result.bound)
        result.partial_gangs += 0 < placed < run.gang
    return result


class _Bound:
    """What `e2e._observe` writes into: the pods seen bound, when."""

    def __init__(self, result: Backlog) -> None:
        self.bound = result.bound


def report(results: list[Backlog], args: argparse.Namespace) -> None:
    print(f"\n{args.nodes} nodes of 32 cpu, pods of 100m; every pod created before the start")
    header = f"{'scheduler':14} {'gang':>4} {'gangs':>6} {'pods':>6} {'pods/s':>8}"
    print(
        f"{header} {'first s':>8} {'last s':>8} {'attempts/pod':>12} {'Lahar ms/pod':>12} "
        f"{'unbound':>7} {'partial':>7}"
    )
    for r in results:
        first = min(r.bound.values()) - r.started if r.bound else float("nan")
        last = max(r.bound.values()) - r.started if r.bound else float("nan")
        per_pod = r.attempts / max(1, len(r.bound))
        lahar = 1000 * r.lahar_cpu / max(1, len(r.bound))
        print(
            f"{r.run.scheduler:14} {r.run.gang:4d} {r.gangs:6d} {r.pods:6d} "
            f"{r.pods_per_second:8.1f} {first:8.1f} {last:8.1f} {per_pod:12.2f} {lahar:12.2f} "
            f"{r.pods - len(r.bound):7d} {r.partial_gangs:7d}"
        )


def breakdown(results: list[Backlog]) -> None:
    """CPU milliseconds per bound pod, by component and run, from the scheduler's start to the
    last bind: where a backlog's pods cost the machine."""
    if not results:
        return
    names = sorted({name for r in results for name in r.cpu}, key=lambda n: -results[0].cpu[n])
    print("\nCPU ms per bound pod, by component")
    labels = [f"{r.run.scheduler[:5]}{r.run.gang}x{r.gangs}" for r in results]
    print(f"{'component':24} " + " ".join(f"{label:>14}" for label in labels))
    for name in [*names, "whole machine"]:
        cells = [
            1000
            * (r.machine_cpu if name == "whole machine" else r.cpu.get(name, 0.0))
            / max(1, len(r.bound))
            for r in results
        ]
        print(f"{name:24} " + " ".join(f"{c:14.2f}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--gangs", type=int, nargs="+", default=[8], help="gang sizes")
    parser.add_argument("--backlog", type=int, nargs="+", default=[100, 500], help="gangs queued")
    parser.add_argument(
        "--runs", nargs="+", default=["lahar", PEER], choices=["lahar", PEER], help="schedulers"
    )
    parser.add_argument("--qps", type=int, default=500, help="every scheduler's client QPS")
    parser.add_argument("--workers", type=int, default=16, help="threads creating pods")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    parser.add_argument(
        "--profile", type=Path, help="folder for py-spy profiles of Lahar's extender, per run"
    )
    parser.add_argument(
        "--ungated",
        action="store_true",
        help="experiment: gang pods created without Lahar's gate (the webhook's pod entry "
        "removed, as when it is down): their gangs are admitted when the scheduler asks",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lahar-backlog-") as folder:
        bench = start(
            Path(folder),
            nodes=args.nodes,
            qps=args.qps,
            peer=PEER in args.runs,
            ungated=args.ungated,
        )
        if args.ungated:
            print("EXPERIMENT, not as shipped: gang pods created without Lahar's gate")
        results = []
        try:
            with connect(bench.cluster.kubeconfig) as api:
                for size in args.gangs:
                    for gangs in args.backlog:
                        for scheduler in args.runs:
                            letter = "d" if scheduler == PEER else "c"
                            run = Run(letter, f"{scheduler}, gangs of {size}", scheduler, size)
                            print(f"{scheduler}: {gangs} gangs of {size}", flush=True)
                            results.append(measure(bench, api, run, gangs, args))
                            r = results[-1]
                            print(
                                f"  {len(r.bound)}/{r.pods} bound, {r.pods_per_second:.1f} pods/s",
                                flush=True,
                            )
                            clean(api, run, f"bench-backlog-{run.key}-{gangs}")
        finally:
            bench.down()
    report(results, args)
    breakdown(results)


if __name__ == "__main__":
    main()
