"""`lahar whatif`: what would happen on the live cluster, an estimate.

- `-f job.yaml`: when would this Job start if submitted now, where, whom would it evict and whom
  would it delay, or why would it not start. The Job is taken as the admission webhook takes it
  (a Job it refuses is refused here with its message, exit 1) and the snapshot played with and
  without it (`simulate.whatif`).
- `--policy new.yaml` and/or `--queue ml.weight=4` (repeatable): the snapshot played as it is
  (`current`) and with the change (`new`) side by side: each queue's share per hour, each
  pending gang's start, the evictions (`simulate.comparison`); with `-f` too, the Job's answer
  under each. A queue change the webhook would refuse is refused with its message.

The cluster is read by `cli.cluster_snapshot` (list and get only). Every answer ends with what
the estimate rests on and what it cannot know (`simulate.whatif_words`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from extender.cli import cluster_snapshot, kubectl
from extender.cli.simulate_cmd import write_report
from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate import queue_edits, whatif_words
from extender.simulate.comparison import compare
from extender.simulate.job_input import Refused, read_job
from extender.simulate.report import level_table
from extender.simulate.side_by_side import WorkerDied, play
from extender.simulate.summary import summarize
from extender.simulate.trace import Trace
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
        metavar="FILE",
        help="the Volcano Job (YAML), as for kubectl apply -f; - reads standard input",
    )
    parser.add_argument(
        "--policy",
        type=Path,
        metavar="FILE",
        help="play this Lahar policy file beside the policy in force",
    )
    parser.add_argument(
        "--queue",
        action="append",
        default=[],
        metavar="QUEUE.FIELD=VALUE",
        help="play the snapshot with a queue changed beside it as it is (repeatable): FIELD "
        f"{queue_edits.FIELDS} (R a resource: capability.cpu=64)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="with --policy or --queue: also write an HTML report of both runs in DIR",
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
        default=None,
        help="how far ahead to play, in hours (default 24 with -f, else 6)",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text (default) or json"
    )
    cluster_snapshot.add_snapshot_flags(parser)
    parser.set_defaults(run=_whatif)


def _whatif(args: argparse.Namespace) -> int:
    logger = logging.getLogger("extender")
    level = logger.level
    if not args.verbose:
        # The engine's lines, thousands per run, warnings included, are of virtual time: a
        # member late at the barrier in the replay is no fault of the cluster.
        logger.setLevel(logging.ERROR)
    try:
        return _asked(args)
    finally:
        logger.setLevel(level)  # (as it was: the command may run inside a longer process)


def _asked(args: argparse.Namespace) -> int:
    changed = args.policy is not None or bool(args.queue)
    if args.filename is None and not changed:
        raise SystemExit(f"lahar {COMMAND}: give -f JOB, --policy FILE or --queue Q.FIELD=VALUE")
    hours = args.hours if args.hours is not None else (24.0 if args.filename else 6.0)
    if not hours > 0:
        raise SystemExit(f"lahar {COMMAND}: --hours must be more than 0, got {hours:g}")
    try:
        edits = [queue_edits.parse_edit(text) for text in args.queue]
    except ValueError as error:
        raise SystemExit(f"lahar {COMMAND}: --queue {error}") from None
    new_policy = load_policy(args.policy, REGISTRY) if args.policy is not None else None
    text = _job_text(args.filename) if args.filename is not None else None
    taken = cluster_snapshot.take(args, COMMAND)
    new_trace = taken.trace
    if edits:
        try:
            new_trace = queue_edits.apply(taken.trace, edits)
        except ValueError as error:
            print(f"lahar {COMMAND}: --queue: {error}", file=sys.stderr)
            return 1
    runs = [("current", taken.trace, taken.policy)]
    if changed:
        runs.append(("new", new_trace, new_policy or taken.policy))
    if text is None:
        return _compare(args, taken, runs, hours * 3600)
    return _answer(args, taken, runs, text, hours * 3600)


def _answer(
    args: argparse.Namespace,
    taken: cluster_snapshot.Taken,
    runs: list[tuple[str, Trace, Policy]],
    text: str,
    horizon: float,
) -> int:
    """The Job's answer under each run."""
    run_time = cluster_snapshot.run_time_flag(COMMAND, "run-time", args.run_time)
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
    try:
        answers = [
            (name, ask(trace, asked.job, policy, horizon=horizon)) for name, trace, policy in runs
        ]
    except ValueError as error:  # (a Job of that name exists: `lahar explain` says why it waits)
        print(f"lahar {COMMAND}: {error}", file=sys.stderr)
        return 1
    if args.output == "json":
        bodies = {
            name: whatif_words.as_json(answer, taken.trace, taken.limits, taken.policy_from)
            | {
                "notes": [
                    *taken.notes,
                    *whatif_words.notes(taken.trace, taken.limits, taken.policy_from),
                ]
            }
            for name, answer in answers
        }
        body = bodies["current"] if len(bodies) == 1 else {"runs": bodies}
        print(json.dumps(body | {"warnings": list(asked.warnings)}, indent=2))
        return 0
    for warning in asked.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    for name, answer in answers:
        if len(answers) > 1:
            print(f"{_run_label(name, args)}:")
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


def _compare(
    args: argparse.Namespace,
    taken: cluster_snapshot.Taken,
    runs: list[tuple[str, Trace, Policy]],
    horizon: float,
) -> int:
    """The snapshot as it is and with the change, side by side."""
    try:
        outcomes = play(
            taken.trace,
            [(name, policy) for name, _, policy in runs],
            traces={name: trace for name, trace, _ in runs},
            horizon=horizon,
        )
    except WorkerDied as error:
        raise SystemExit(f"lahar {COMMAND}: {error}") from None
    compared = compare(outcomes, horizon)
    if args.output == "json":
        print(json.dumps(whatif_words.comparison_json(compared), indent=2))
        return 0
    for name, _, _ in runs:
        print(f"{name}: {_run_label(name, args)}")
    summaries = [summarize(outcome) for outcome in outcomes]
    for headers, rows in (
        whatif_words.share_table(compared),
        whatif_words.start_table(compared),
        level_table(summaries),  # queues that share a parent: their shares against fair
    ):
        if rows:
            print()
            print(kubectl.table(headers, rows))
    print()
    for line in whatif_words.eviction_lines(compared):
        print(line)
    print()
    for note in [*taken.notes, *whatif_words.notes(taken.trace, taken.limits, taken.policy_from)]:
        print(note)
    if args.out is not None:
        write_report(args.out / "whatif.html", outcomes, summaries, "what if", COMMAND)
    return 0


def _run_label(name: str, args: argparse.Namespace) -> str:
    if name == "current":
        return "the cluster as it is, under the policy in force"
    changes = [f"policy {args.policy}"] if args.policy is not None else []
    changes += [f"queue {edit}" for edit in args.queue]
    return "with " + ", ".join(changes)


def _job_text(path: Path) -> str:
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise SystemExit(f"lahar {COMMAND}: {path}: cannot read it: {error.strerror}") from None
