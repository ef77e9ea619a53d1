"""What the resource commands (`lahar job|queue|podgroup ...`) share with kubectl: how to reach
the cluster (--kubeconfig, default $KUBECONFIG then ~/.kube/config; --context; -n/--namespace,
default the context's; -A/--all-namespaces) and how to print (-o table|wide|json|yaml)."""

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

from extender.kube import KubeError, context_namespace, list_objects
from extender.kube import connect as kube_connect

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


def kubeconfig_path(given: Path | None) -> Path:
    if given is not None:
        return given
    env = os.environ.get("KUBECONFIG", "")
    first = next((part for part in env.split(os.pathsep) if part), None)
    return Path(first) if first else Path.home() / ".kube" / "config"


@dataclass(frozen=True)
class Connection:
    api: k8s.ApiClient
    namespace: str  # the namespace commands act in (the context's unless -n)


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[Connection]:
    path = kubeconfig_path(args.kubeconfig)
    if not path.is_file():
        raise KubeError(f"kubeconfig {path} does not exist; pass --kubeconfig FILE")
    namespace = getattr(args, "namespace", None) or context_namespace(path, args.context)
    with kube_connect(path, args.context) as api:
        yield Connection(api, namespace)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's AGE: 45s, 12m, 3h, 2d."""
    if not timestamp:
        return "<unknown>"
    then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns as kubectl prints them: upper-case headers, left aligned, three spaces apart."""
    if not rows:
        return ""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    return "\n".join(
        "   ".join(str(cell).ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip()
        for r in [headers, *rows]
    )


def dump(objects: list[dict[str, Any]], output: str) -> str:
    """Objects as -o json|yaml print them: one object alone, several as a List."""
    document: dict[str, Any] = (
        objects[0]
        if len(objects) == 1
        else {"apiVersion": "v1", "kind": "List", "items": objects, "metadata": {}}
    )
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
    args: argparse.Namespace, api_version: str, kind: str, header: Header, row: Row
) -> int:
    """List the objects of `kind` as asked (`add_list`'s flags) and print them, kubectl-style."""
    across = bool(getattr(args, "all_namespaces", False))
    namespaced = hasattr(args, "namespace")
    with connect(args) as cluster:
        namespace = cluster.namespace if namespaced and not across else None
        objects = list_objects(cluster.api, api_version, kind, namespace=namespace)
    objects.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
    if args.output in ("json", "yaml"):
        print(dump([clean(o) for o in objects], args.output))
    elif not objects:
        where = f" in namespace {namespace}" if namespace else " in any namespace" if across else ""
        print(f"No {kind}s found{where}.")
    else:
        wide = args.output == "wide"
        print(table(header(across, wide), [row(o, across, wide) for o in objects]))
    return 0
