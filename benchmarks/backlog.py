"""Throughput under a backlog of gangs: every pod of N gangs exists before the scheduler starts.

    .venv/bin/python benchmarks/backlog.py [--nodes 100] [--gangs 8] [--backlog 100 500]
                                           [--runs lahar coscheduling] [--timeout 600]
                                           [--workers 16] [--profile DIR] [--ungated]

What a user submitting a sweep does to a scheduler that was down, or restarted: on the dev cluster
of `e2e_cluster` (N fake nodes of 32 cpu, 100m pods, so everything fits many times over), for each
gang size, each backlog size and each scheduler, the scheduler is stopped, every PodGroup and every
pod of the backlog is created, and the scheduler is started again: `e2e.py`'s burst form, one
run per backlog. Printed per run: pods bound per second from the scheduler's start to the last
bind, the seconds to the first and the last bind, kube-scheduler's scheduling attempts per bound
pod (`scheduler_schedule_attempts_total` of the run's scheduler, which starts at 0 with the
process), Lahar's CPU ms per bound pod (from when the restarted extender answers), pods never
bound and gangs left partly bound; then the CPU each bound pod cost each process. Liveness is the
point: pods/s must not fall as the backlog grows.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e import Result, Run, breakdown, clean, measure
from e2e_cluster import PEER, start

from extender.kube import connect


def report(results: list[Result], args: argparse.Namespace) -> None:
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
            f"{r.run.scheduler:14} {r.run.gang:4d} {r.pods // r.run.gang:6d} {r.pods:6d} "
            f"{r.pods_per_second:8.1f} {first:8.1f} {last:8.1f} {per_pod:12.2f} {lahar:12.2f} "
            f"{r.pods - len(r.bound):7d} {r.partial_gangs:7d}"
        )


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
                            namespace = f"bench-backlog-{run.key}-{gangs}"
                            print(f"{scheduler}: {gangs} gangs of {size}", flush=True)
                            # e2e's options for one run of this backlog, in the burst form
                            one = argparse.Namespace(
                                **vars(args), pods=gangs * size, creator_gates=False
                            )
                            r = measure(bench, api, run, one, burst=True, namespace=namespace)
                            results.append(r)
                            print(
                                f"  {len(r.bound)}/{r.pods} bound, {r.pods_per_second:.1f} pods/s",
                                flush=True,
                            )
                            clean(api, run, namespace)
        finally:
            bench.down()
    report(results, args)
    breakdown(
        results, [f"{r.run.scheduler[:5]}{r.run.gang}x{r.pods // r.run.gang}" for r in results]
    )


if __name__ == "__main__":
    main()
