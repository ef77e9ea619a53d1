"""How scheduling throughput and latency grow with the cluster: `benchmarks/e2e.py`'s runs at
several cluster sizes, as a table and a plot.

    .venv/bin/python benchmarks/scaling.py [--nodes 100 1000 5000] [--pods 3000]
                                           [--runs a b c8] [--plot docs/scaling.png]

For each size a fresh dev cluster with that many fake nodes runs the chosen runs of e2e.py ((a)
the stock kube-scheduler alone, (b) with Lahar, (c8) Lahar on gangs of 8, (d8) the Coscheduling
peer on them) with the same pods per run. Printed: pods/s and p50/p99 latency per run and size;
the plot (matplotlib) shows pods/s and p99 latency against the number of nodes, one line per run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import matplotlib

matplotlib.use("Agg")  # files only, no display

from e2e import Result, clean, measure, runs
from e2e_cluster import start
from matplotlib import pyplot

from extender.kube import connect


def sweep(args: argparse.Namespace) -> dict[int, list[Result]]:
    peer = any(key.startswith("d") for key in args.runs)
    chosen = [run for run in runs(args.gangs, peer=peer) if run.key in args.runs]
    figures: dict[int, list[Result]] = {}
    for nodes in args.nodes:
        with tempfile.TemporaryDirectory(prefix="lahar-scaling-") as folder:
            started = time.monotonic()
            bench = start(Path(folder), nodes=nodes, qps=args.qps, peer=peer)
            print(f"{nodes} nodes up in {time.monotonic() - started:.0f} s", flush=True)
            try:
                with connect(bench.cluster.kubeconfig) as api:
                    figures[nodes] = []
                    for run in chosen:
                        result = measure(bench, api, run, args)
                        figures[nodes].append(result)
                        rate = result.pods_per_second
                        print(f"  ({run.key}) {run.label}: {rate:.1f} pods/s", flush=True)
                        clean(api, run)
            finally:
                bench.down()
    return figures


def table(figures: dict[int, list[Result]]) -> list[str]:
    lines = [f"{'nodes':>6}  {'run':34} {'pods/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'partial':>7}"]
    for nodes, results in figures.items():
        for r in results:
            lines.append(
                f"{nodes:6d}  ({r.run.key}) {r.run.label:29} {r.pods_per_second:8.1f} "
                f"{r.latency_ms(0.5):8.0f} {r.latency_ms(0.99):8.0f} {r.partial_gangs:7d}"
            )
    return lines


def plot(figures: dict[int, list[Result]], path: Path, pods: int) -> None:
    sizes = sorted(figures)
    labels = {r.run.key: f"({r.run.key}) {r.run.label}" for rs in figures.values() for r in rs}
    fig, (rate, latency) = pyplot.subplots(1, 2, figsize=(11, 4.2))
    for key, label in labels.items():
        series = [next(r for r in figures[n] if r.run.key == key) for n in sizes]
        rate.plot(sizes, [r.pods_per_second for r in series], marker="o", label=label)
        latency.plot(sizes, [r.latency_ms(0.99) / 1000 for r in series], marker="o", label=label)
    for axis, title in ((rate, "pods/s (first create to last bind)"), (latency, "p99 s")):
        axis.set_xscale("log")
        axis.set_xlabel("nodes")
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
    rate.legend(fontsize=8)
    fig.suptitle(f"Scheduling {pods} pods per run on the dev cluster (2 cores)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[100, 1000, 5000])
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--runs", nargs="*", default=["a", "b", "c8"])
    parser.add_argument("--gangs", type=int, nargs="*", default=[8])
    parser.add_argument("--qps", type=int, default=500)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--create-qps", type=float, default=1000.0)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--plot", type=Path, help="write the plot here (PNG or SVG)")
    args = parser.parse_args()
    args.profile = None
    args.creator_gates = False  # as shipped: the webhook gates gang pods, not the benchmark
    figures = sweep(args)
    print()
    print("\n".join(table(figures)))
    if args.plot is not None:
        plot(figures, args.plot, args.pods)
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
