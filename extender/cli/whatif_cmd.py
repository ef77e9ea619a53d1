"""`lahar whatif -f job.yaml`: when would this Job start if submitted now, where, whom would it
evict and whom would it delay, or why would it not start; an estimate from the live cluster.

The cluster is read (`cli.cluster_snapshot`: list and get only), the Job taken as the admission
webhook takes it (a Job it refuses is refused here with its message, exit 1), and the snapshot
played with and without it (`simulate.whatif`). The answer ends with what the estimate rests on
and what it cannot know (`simulate.whatif_words`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from extender.cli import cluster_snapshot
from extender.simulate import whatif_words
from extender.simulate.job_input import Refused, read_job
from extender.simulate.whatif import ask

COMMAND = "whatif"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="when a Job would start on the live cluster, where, and whom it would evict or delay",
        description="Reads the cluster (list and get only; the ClusterRole lahar-whatif grants "
        "it), plays it in Lahar's simulator with and without the Job, through the extender's own "
        "engine and the policy in force, and says when the Job would start (with a range and "
        "the gangs it waits for), on which nodes, whom it would evict, which waiting gangs it "
        "would delay, or why it would not start. An estimate: it says what it cannot know.",
    )
    parser.add_argument(
        "-f",
        "--filename",
        type=Path,
        required=True,
        metavar="FILE",
        help="the Volcano Job (YAML), as for kubectl apply -f; - reads standard input",
    )
    parser.add_argument(
        "--run-time",
        metavar="DURATION",
        help="how long the Job runs, `2h` or `1h-3h` (default: its annotation "
        "lahar.io/expected-run-time or spec.runningEstimate, else the history of its name)",
    )
    parser.add_argument(
        "--hours",
        type=float,
        default=24.0,
        help="how far ahead to play, in hours (default 24)",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text (default) or json"
    )
    cluster_snapshot.add_snapshot_flags(parser)
    parser.set_defaults(run=_whatif)


def _whatif(args: argparse.Namespace) -> int:
    if not args.verbose:  # (the engine's lines, thousands per run)
        logging.getLogger("extender").setLevel(logging.WARNING)
    if not args.hours > 0:
        raise SystemExit(f"lahar {COMMAND}: --hours must be more than 0, got {args.hours:g}")
    run_time = cluster_snapshot.run_time_flag(COMMAND, "run-time", args.run_time)
    text = _job_text(args.filename)
    taken = cluster_snapshot.take(args, COMMAND)
    asked = read_job(
        text,
        taken.trace,
        namespace=taken.namespace,
        history=taken.history,
        run_time=run_time,
        default=cluster_snapshot.run_time_flag(COMMAND, "default-run-time", args.default_run_time),
    )
    if isinstance(asked, Refused):
        print(f"lahar {COMMAND}: {asked.message}", file=sys.stderr)
        return 1
    answer = ask(taken.trace, asked.job, taken.policy, horizon=args.hours * 3600)
    if args.output == "json":
        body = whatif_words.as_json(answer, taken.trace, taken.limits, taken.policy_from)
        print(json.dumps(body | {"warnings": list(asked.warnings)}, indent=2))
        return 0
    for warning in asked.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    for line in whatif_words.lines(answer):
        print(line)
    print()
    for note in [*taken.notes, *whatif_words.notes(taken.trace, taken.limits, taken.policy_from)]:
        print(note)
    if asked.estimate.source == "unknown":
        print(
            "The Job's own run time is unknown (--run-time): it keeps its nodes to the end, so "
            "the delays it causes are the most it could cause."
        )
    return 0


def _job_text(path: Path) -> str:
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise SystemExit(f"lahar {COMMAND}: {path}: cannot read it: {error.strerror}") from None
