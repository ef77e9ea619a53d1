"""`lahar simulate [TRACE] [--policy F ...] [--seed N]`: a job trace played against Lahar's
policies and the stock scheduler's way on a simulated cluster, one table row per policy."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from extender.cli.serve_cmd import default_policy
from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate.defaults import STOCK, stock_policy, story_trace
from extender.simulate.metrics import summarize
from extender.simulate.report import table
from extender.simulate.run import simulate
from extender.simulate.trace import Trace, TraceError, load_trace


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "simulate",
        help="play a job trace against Lahar's policy and the stock scheduler's, on virtual time",
        description="Runs Lahar's real plugins (the extender's own code) over a simulated "
        "cluster and a job trace, for each policy, and prints makespan, job wait, utilisation, "
        "fairness over queue weights, partial gangs and preemptions.",
    )
    parser.add_argument(
        "trace",
        nargs="?",
        type=Path,
        help="a trace file (YAML or JSON, kind Trace); default: the seeds' two-job story",
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
    parser.set_defaults(run=_simulate)


def _policies(names: list[str]) -> list[tuple[str, Policy]]:
    if not names:
        return [("lahar", load_policy(default_policy(), REGISTRY)), (STOCK, stock_policy())]
    chosen = []
    for name in names:
        if name == STOCK:
            chosen.append((STOCK, stock_policy()))
        else:
            chosen.append((Path(name).stem, load_policy(Path(name), REGISTRY)))
    return chosen


def _simulate(args: argparse.Namespace) -> int:
    if not args.verbose:  # the barrier's and the gang rules' lines, thousands per run
        logging.getLogger("extender").setLevel(logging.WARNING)
    try:
        trace: Trace = load_trace(args.trace) if args.trace is not None else story_trace()
    except TraceError as error:
        raise SystemExit(f"lahar simulate: {error}") from None
    summaries = [
        summarize(simulate(trace, policy, name, seed=args.seed))
        for name, policy in _policies(args.policy)
    ]
    print(table(summaries))
    return 0
