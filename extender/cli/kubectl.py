"""What the resource commands (`lahar job|queue|podgroup ...`) share with kubectl: how to reach
the cluster (--kubeconfig, default $KUBECONFIG's files merged as kubectl merges them, then
~/.kube/config; --context; -n/--namespace, default the context's; -A/--all-namespaces), which
names may reach a URL, and how to print (-o table|wide|json|yaml; listings as a List)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from extender.kube import connect as kube_connect
from extender.kube import context_namespace, list_objects
from extender.kube.client import Kubeconfig

OUTPUTS = ("table", "wide", "json", "yaml")


def add_connection_flags(parser: argparse.ArgumentParser, *, namespaced: bool) -> None:
    parser.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default $KUBECONFIG, else ~/.kube/config)"
    )
    parser.add_argument("--context", help="the kubeconfig context to use (default its current)")
    if namespaced:
        parser.add_argument("-n", "--namespace", help="namespace (default the context's)")


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=OUTPUTS, default="table", help="table (default), wide, json, yaml"
    )


def object_name(text: str) -> str:
    """An object's name as given on the command line, refused before it reaches a URL as the
    API server's path rules refuse it: an empty name would make a DELETE the whole collection's."""
    if not text:
        raise argparse.ArgumentTypeError("resource name may not be empty")
    if text in (".", ".."):
        raise argparse.ArgumentTypeError(f"resource name may not be {text!r}")
    for forbidden in ("/", "%"):
        if forbidden in text:
            raise argparse.ArgumentTypeError(
                f"{text!r}: resource name may not contain {forbidden!r}"
            )
    return text


def add_name(parser: argparse.ArgumentParser) -> None:
    """The NAME argument of a command acting on one object (`object_name` checks it)."""
    parser.add_argument("name", type=object_name)


def kubeconfig_path(given: Path | None) -> Kubeconfig:
    """--kubeconfig, else the files of $KUBECONFIG (merged as kubectl merges them), else
    ~/.kube/config."""
    if given is not None:
        return given
    listed = [part for part in os.environ.get("KUBECONFIG", "").split(os.pathsep) if part]
    files = tuple(Path(part).expanduser() for part in listed)
    return files or Path.home() / ".kube" / "config"


@dataclass(frozen=True)
class Connection:
    api: k8s.ApiClient
    namespace: str  # the namespace commands act in (the context's unless -n)


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[Connection]:
    config = kubeconfig_path(args.kubeconfig)  # (a missing file is refused by the kube layer)
    namespace = getattr(args, "namespace", None) or context_namespace(config, args.context)
    with kube_connect(config, args.context) as api:
        yield Connection(api, namespace)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's AGE (apimachinery's `HumanDuration`): seconds up to 2 minutes, then minutes
    and seconds up to 10 minutes, minutes up to 3 hours, hours and minutes up to 8 hours,
    hours up to 2 days, days and hours up to 8 days, days up to 2 years, years and days up to
    8 years, then years; each part rounded down."""
    if not timestamp:
        return "<unknown>"
    then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < -1:
        return "<invalid>"
    seconds = max(seconds, 0)  # (a second ahead: the clocks differ, "now")
    minutes, hours = seconds // 60, seconds // 3600
    days, years = hours // 24, hours // (24 * 365)
    steps = (
        (seconds < 120, f"{seconds}s"),
        (minutes < 10, _two(minutes, "m", seconds % 60, "s")),
        (minutes < 180, f"{minutes}m"),
        (hours < 8, _two(hours, "h", minutes % 60, "m")),
        (hours < 48, f"{hours}h"),
        (hours < 24 * 8, _two(days, "d", hours % 24, "h")),
        (hours < 24 * 365 * 2, f"{days}d"),
        (hours < 24 * 365 * 8, _two(years, "y", days % 365, "d")),
    )
    return next((shown for fits, shown in steps if fits), f"{years}y")


def _two(big: int, unit: str, small: int, small_unit: str) -> str:
    return f"{big}{unit}{small}{small_unit}" if small else f"{big}{unit}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns as kubectl prints them: upper-case headers, left aligned, three spaces apart."""
    if not rows:
        return ""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    return "\n".join(
        "   ".join(str(cell).ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip()
        for r in [headers, *rows]
    )


def listed(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """What `kubectl get` prints for a listing with -o json|yaml, however many objects it has:
    a List (so `.items[]` reads one object or none as it reads several)."""
    return {"apiVersion": "v1", "kind": "List", "items": objects, "metadata": {}}


def dump(document: dict[str, Any], output: str) -> str:
    """A document as -o json|yaml prints it."""
    if output == "json":
        return json.dumps(document, indent=4, default=str)
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False).rstrip()


def clean(obj: dict[str, Any]) -> dict[str, Any]:
    """An object as read through the dynamic client, without its managed fields (kubectl hides
    them too)."""
    metadata = dict(obj.get("metadata") or {})
    metadata.pop("managedFields", None)
    return {**obj, "metadata": metadata}


Header = Callable[[bool, bool], Sequence[str]]  # (across namespaces, wide) -> column names
Row = Callable[[dict[str, Any], bool, bool], Sequence[str]]  # (object, across, wide) -> cells
Arrange = Callable[[list[dict[str, Any]], bool], Sequence[Sequence[str]]]  # (objects, wide)


def add_list(
    verbs: Any, run: Callable[[argparse.Namespace], int], *, help: str, namespaced: bool
) -> None:
    """The `list` verb of a resource command: connection flags, -A for a namespaced kind, -o."""
    listing = verbs.add_parser("list", help=help)
    add_connection_flags(listing, namespaced=namespaced)
    if namespaced:
        listing.add_argument("-A", "--all-namespaces", action="store_true")
    add_output_flag(listing)
    listing.set_defaults(run=run)


def print_list(
    args: argparse.Namespace,
    api_version: str,
    kind: str,
    header: Header,
    row: Row,
    *,
    arrange: Arrange | None = None,
) -> int:
    """List the objects of `kind` as asked (`add_list`'s flags) and print them, kubectl-style;
    `arrange` makes the table's rows from all the objects at once (else one `row` each, in
    name order)."""
    across = bool(getattr(args, "all_namespaces", False))
    namespaced = hasattr(args, "namespace")
    with connect(args) as cluster:
        namespace = cluster.namespace if namespaced and not across else None
        objects = list_objects(cluster.api, api_version, kind, namespace=namespace)
    objects.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
    if args.output in ("json", "yaml"):
        print(dump(listed([clean(o) for o in objects]), args.output))
    elif not objects:
        where = f" in namespace {namespace}" if namespace else " in any namespace" if across else ""
        print(f"No {kind}s found{where}.")
    else:
        wide = args.output == "wide"
        cells = arrange(objects, wide) if arrange else [row(o, across, wide) for o in objects]
        print(table(header(across, wide), cells))
    return 0
