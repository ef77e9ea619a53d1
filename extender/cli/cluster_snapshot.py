"""Taking the live cluster as a trace, for `lahar simulate --from-cluster` and `lahar whatif`:
their shared flags, the reads (list and get only: `kube.snapshot_lists`, the run-time history,
the policy in force) and saving a snapshot to replay offline.

The cluster is read with the kubeconfig as kubectl reads it (`--kubeconfig`, `--context`). The
policy in force is the one the installed extender runs (`kube.policy_source`: its Deployment's
`--policy` file in its ConfigMap), or `--current-policy FILE` where there is no such Deployment.
`--from FILE` replays a snapshot saved with `--save FILE` instead of reading the cluster (its
policy saved beside it, `FILE` with the suffix `.policy.yaml`), so a snapshot can be edited,
kept and shared. What the snapshot could not carry is said in notes under the answer.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from extender.api.run_times import RunHistory, parse_run_time
from extender.api.wire import describe_invalid
from extender.cli import kubectl
from extender.framework.policy import Policy, parse_policy
from extender.kube.policy_source import policy_in_force
from extender.kube.run_times import read_history
from extender.kube.snapshot_lists import list_for_snapshot
from extender.plugins import REGISTRY
from extender.simulate.collector import young_collections_every
from extender.simulate.from_cluster import Limits, snapshot
from extender.simulate.trace import Trace, TraceError, load_trace

POLICY_SUFFIX = ".policy.yaml"


@dataclass
class Taken:
    """A snapshot and the policy in force: where each was read, and what it could not carry."""

    trace: Trace
    policy: Policy
    policy_text: str
    policy_from: str
    namespace: str  # the namespace a Job asked about goes to when it names none
    history: RunHistory
    limits: Limits | None  # None: replayed from a file (what was left out then is not known)
    notes: list[str] = field(default_factory=list)


def add_snapshot_flags(parser: argparse.ArgumentParser, *, replay: bool = True) -> None:
    """The flags reading a snapshot; `replay`: with --from FILE (a command that takes a trace
    file otherwise has no need of it)."""
    kubectl.add_connection_flags(parser, namespaced=True)
    parser.add_argument(
        "--current-policy",
        type=Path,
        metavar="FILE",
        help="the policy the extender runs, where no Deployment lahar-system/lahar-scheduler "
        "says it (a dev cluster, another install); default: read from that Deployment",
    )
    if replay:
        parser.add_argument(
            "--from",
            dest="from_file",
            type=Path,
            metavar="FILE",
            help="replay a snapshot saved with --save instead of reading the cluster",
        )
    parser.add_argument(
        "--default-run-time",
        metavar="DURATION",
        help="the run time of a gang no other source gives one for: `1h` (taken as 30m-2h) or "
        "a range `30m-2h`; default: unknown (it keeps its nodes past the horizon)",
    )


def run_time_flag(command: str, flag: str, text: str | None) -> tuple[float, float] | None:
    """A run time flag (`1h` or `30m-2h`) as (low, high) seconds; exits naming the flag."""
    if text is None:
        return None
    try:
        return parse_run_time(text, f"--{flag}")
    except ValueError as error:
        raise SystemExit(f"lahar {command}: {error}") from None


def take(args: argparse.Namespace, command: str) -> Taken:
    """The snapshot the flags ask for: the live cluster read now, or a saved one."""
    default = run_time_flag(command, "default-run-time", args.default_run_time)
    if getattr(args, "from_file", None) is not None:
        return _saved(args, command)
    with young_collections_every():  # (millions of values that form no cycles: its docstring)
        with kubectl.connect(args) as cluster:
            taken_at = time.time()
            raw = list_for_snapshot(cluster.api)
            history, unread = read_history(cluster.api)
            if args.current_policy is not None:
                text, where = _read(args.current_policy, command), str(args.current_policy)
            else:
                text, where = policy_in_force(cluster.api)
            namespace = cluster.namespace
        try:
            taken = snapshot(raw, taken_at, history, default)
        except ValidationError as error:  # (a state the snapshot's rules did not foresee)
            raise SystemExit(
                f"lahar {command}: the cluster's snapshot cannot be played: "
                f"{describe_invalid(error, root='(trace)')}"
            ) from None
    notes = [] if unread is None else [f"Run-time history: {unread}."]
    return Taken(
        taken.trace,
        parse_policy(text, REGISTRY, source=where),
        text,
        where,
        namespace,
        history,
        taken.limits,
        notes,
    )


def save(taken: Taken, path: Path) -> list[Path]:
    """Write the snapshot to `path` (a trace `load_trace` reads back equal) and its policy
    beside it; the files written."""
    document = taken.trace.model_dump(by_alias=True, exclude_defaults=True, mode="json")
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    policy = policy_path(path)
    policy.write_text(taken.policy_text, encoding="utf-8")
    return [path, policy]


def policy_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(path.suffix) + POLICY_SUFFIX)


def _saved(args: argparse.Namespace, command: str) -> Taken:
    path: Path = args.from_file
    try:
        trace = load_trace(path)
    except TraceError as error:
        raise SystemExit(f"lahar {command}: {error}") from None
    policy_file = args.current_policy or policy_path(path)
    if not policy_file.is_file():
        raise SystemExit(
            f"lahar {command}: --from {path}: no policy beside it ({policy_file}); pass "
            "--current-policy FILE"
        )
    text = _read(policy_file, command)
    namespace = getattr(args, "namespace", None) or "default"
    return Taken(
        trace,
        parse_policy(text, REGISTRY, source=str(policy_file)),
        text,
        str(policy_file),
        namespace,
        RunHistory(),
        None,
    )


def _read(path: Path, command: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise SystemExit(f"lahar {command}: {path}: cannot read it: {error.strerror}") from None
