"""`lahar simulate [TRACE] [--policy F ...] [--seed N] [--out DIR]`: a job trace played against
Lahar's policies and the stock scheduler's way on a simulated cluster (side by side, on the
machine's cores), one table row per policy (and, when the trace's queues form a tree, a table of
the shares per tree level; when it has a network topology, a table of the gangs' placement in
it), and with --out an HTML report with plots.

A trace with an autoscaled pool plays each policy with gangs twice, once per scale-up mode that
buys nodes (`NAME-atomic`: every queue `provisioningRequest`; `NAME-unschedulable`: every queue
`unschedulable`), the stock way once, and adds the table of what the pool cost each run."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extender.api.scale_up import Mode
from extender.cli import cluster_snapshot, kubectl
from extender.cli.serve_cmd import default_policy
from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate import html
from extender.simulate.defaults import STOCK, stock_policy, story_trace
from extender.simulate.report import (
    HEADERS,
    level_notes,
    level_table,
    notes,
    pool_notes,
    pool_table,
    progress,
    row,
    topology_notes,
    topology_table,
)
from extender.simulate.run import Progress, SimulationOutcome
from extender.simulate.side_by_side import WorkerDied, play
from extender.simulate.summary import Summary, summarize
from extender.simulate.synthetic import generate
from extender.simulate.trace import Trace, TraceError, load_trace, parse_trace


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "simulate",
        help="play a job trace against Lahar's policy and the stock scheduler's, on virtual time",
        description="Runs Lahar's real plugins (the extender's own code) over a simulated "
        "cluster and a job trace, for each policy, and prints makespan, job wait, utilisation, "
        "fairness over queue weights, partial gangs and preemptions; on a trace with an "
        "autoscaled pool, Lahar's policy in each scale-up mode and the node-hours each run bought.",
    )
    parser.add_argument(
        "trace",
        nargs="?",
        type=Path,
        help="a trace file (YAML or JSON, kind Trace); default: the two-job story, then "
        "the synthetic multi-queue trace of examples/trace-multiqueue.yaml",
    )
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="FILE",
        help=f"a Lahar policy file to compare (repeatable); `{STOCK}` is the stock scheduler's "
        "way, pod after pod (default: Lahar's policy and stock)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the scheduler's tie-breaks")
    parser.add_argument(
        "--from-cluster",
        action="store_true",
        help="play the live cluster as it is now (read-only: the ClusterRole lahar-whatif "
        "grants what it reads) under the policy in force (the run `current`) and each --policy "
        "(default: stock), up to --hours",
    )
    parser.add_argument(
        "--save",
        type=Path,
        metavar="FILE",
        help="with --from-cluster: also write the snapshot as a trace to FILE (and its policy "
        "beside it), to edit and replay (`lahar simulate FILE`, `lahar whatif --from FILE`)",
    )
    parser.add_argument(
        "--hours",
        type=float,
        default=6.0,
        help="with --from-cluster: how far ahead to play, in hours (default 6)",
    )
    cluster_snapshot.add_snapshot_flags(parser, replay=False)
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="also write an HTML report per trace in DIR: the table and plots (needs the "
        "`report` extra)",
    )
    parser.set_defaults(run=_simulate)


def _policies(names: list[str]) -> list[tuple[str, Policy]]:
    if not names:
        return [("lahar", load_policy(default_policy(), REGISTRY)), (STOCK, stock_policy())]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise SystemExit(f"lahar simulate: --policy {repeated[0]} is given twice")
    # A policy is named by its file's stem, or by the path as given where stems repeat.
    stems = [name if name == STOCK else Path(name).stem for name in names]
    chosen = []
    for name, stem in zip(names, stems, strict=True):
        label = stem if stems.count(stem) == 1 else name
        policy = stock_policy() if name == STOCK else load_policy(Path(name), REGISTRY)
        chosen.append((label, policy))
    return chosen


# On a trace with an autoscaled pool: the modes a policy with gangs is played in, by suffix.
SCALE_UP_RUNS = (("atomic", Mode.PROVISIONING_REQUEST), ("unschedulable", Mode.UNSCHEDULABLE))


def _runs(
    policies: list[tuple[str, Policy]], trace: Trace
) -> tuple[list[tuple[str, Policy]], dict[str, Mode]]:
    """The runs to play on `trace` and the scale-up mode of each that has one: the policies as
    they are, or, on a trace with an autoscaled pool, each policy with gangs once per mode of
    `SCALE_UP_RUNS` (`NAME-atomic`, `NAME-unschedulable`)."""
    if trace.autoscaling is None:
        return policies, {}
    runs: list[tuple[str, Policy]] = []
    modes: dict[str, Mode] = {}
    for name, policy in policies:
        if policy.gang_settings is None:
            runs.append((name, policy))
            continue
        for suffix, mode in SCALE_UP_RUNS:
            runs.append((f"{name}-{suffix}", policy))
            modes[f"{name}-{suffix}"] = mode
    return runs, modes


def _traces(given: Path | None) -> list[tuple[str, str, Trace]]:
    """(what it is, report name, trace): the one given, else the story and the synthetic trace."""
    try:
        if given is not None:
            return [(str(given), given.stem, load_trace(given))]
        return [
            ("the two-job story", "story", story_trace()),
            ("the synthetic multi-queue trace", "multiqueue", parse_trace(generate())),
        ]
    except TraceError as error:
        raise SystemExit(f"lahar simulate: {error}") from None


def _simulate(args: argparse.Namespace) -> int:
    if not args.verbose:  # the barrier's and the gang rules' lines, thousands per run
        logging.getLogger("extender").setLevel(logging.WARNING)
    if args.from_cluster:
        return _from_cluster(args)
    if args.save is not None:
        raise SystemExit("lahar simulate: --save goes with --from-cluster (a trace file is saved)")
    policies = _policies(args.policy)
    traces = _traces(args.trace)
    for number, (label, report, trace) in enumerate(traces):
        if len(traces) > 1:
            gap = "\n" if number else ""
            print(f"{gap}{label}: {len(trace.jobs)} jobs, {trace.node_count} nodes")
        shown = _progress_shown()
        runs, modes = _runs(policies, trace)
        try:
            outcomes = play(trace, runs, seed=args.seed, on_progress=shown, modes=modes)
        except WorkerDied as error:
            raise SystemExit(f"lahar simulate: {error}") from None
        if shown is not None:
            sys.stderr.write("\r\033[K")  # the last progress line goes
        summaries = [summarize(outcome) for outcome in outcomes]
        _print_tables(summaries)
        sys.stdout.flush()
        if args.out is not None:
            write_report(args.out / f"{report}.html", outcomes, summaries, label, "simulate")
    return 0


def write_report(
    path: Path,
    outcomes: list[SimulationOutcome],
    summaries: list[Summary],
    label: str,
    command: str,
) -> None:
    """The HTML report of the runs at `path`, said on stdout; exits naming what is missing."""
    try:
        written = html.write(path, outcomes, summaries, label)
    except html.ReportError as error:
        raise SystemExit(f"lahar {command}: {error}") from None
    print(f"report: {written}")


def _from_cluster(args: argparse.Namespace) -> int:
    """The live cluster played from now under the policy in force (`current`) and each
    --policy (default: the stock scheduler's way), up to --hours."""
    if args.trace is not None:
        raise SystemExit("lahar simulate: give a trace file or --from-cluster, not both")
    if not args.hours > 0:
        raise SystemExit(f"lahar simulate: --hours must be more than 0, got {args.hours:g}")
    taken = cluster_snapshot.take(args, "simulate")
    if args.save is not None:
        for path in cluster_snapshot.save(taken, args.save):
            print(f"saved: {path}")
    others = _policies(args.policy) if args.policy else [(STOCK, stock_policy())]
    runs = [("current", taken.policy), *others]
    trace = taken.trace
    print(
        f"the cluster at {trace.taken_at}: {trace.node_count} nodes, {len(trace.jobs)} gangs, "
        f"played {args.hours:g}h ahead"
    )
    shown = _progress_shown()
    try:
        outcomes = play(trace, runs, seed=args.seed, on_progress=shown, horizon=args.hours * 3600)
    except WorkerDied as error:
        raise SystemExit(f"lahar simulate: {error}") from None
    if shown is not None:
        sys.stderr.write("\r\033[K")
    summaries = [summarize(outcome) for outcome in outcomes]
    _print_tables(summaries)
    for note in taken.notes:
        print(note)
    if args.out is not None:
        write_report(args.out / "cluster.html", outcomes, summaries, "the live cluster", "simulate")
    return 0


def _print_tables(summaries: list[Summary]) -> None:
    """The table of the runs, its notes, and the tables the trace calls for."""
    print(kubectl.table(HEADERS, [row(s) for s in summaries]))
    for note in notes(summaries):
        print(note)
    for table, table_notes in (
        (level_table, level_notes),  # the queues form a tree: the shares per level
        (topology_table, topology_notes),  # a network topology: the gangs' placement in it
        (pool_table, pool_notes),  # an autoscaled pool: what it cost each run
    ):
        headers, rows = table(summaries)
        if rows:
            print()
            print(kubectl.table(headers, rows))
            for note in table_notes(summaries):
                print(note)


def _progress_shown() -> Callable[[Progress], None] | None:
    """On a terminal, a line on stderr saying how far the runs got (the policies played side by
    side, each as last reported), overwritten as they go (a 10,000-job trace can take minutes);
    nothing when stderr is a file or a pipe."""
    if not sys.stderr.isatty():
        return None
    latest: dict[str, Progress] = {}

    def show(report: Progress) -> None:
        latest[report.policy] = report
        runs = list(latest.values())
        line = (
            progress(report)
            if len(runs) == 1
            else " | ".join(progress(r, brief=True) for r in runs)
        )
        sys.stderr.write(f"\r\033[K{line}")
        sys.stderr.flush()

    return show
