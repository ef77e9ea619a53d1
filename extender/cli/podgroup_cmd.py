"""`lahar podgroup list`: PodGroups with their phase, counts and (-o wide) the condition that
says why a gang waits."""

from __future__ import annotations

import argparse
from typing import Any

from extender.api.scheduling import API_VERSION
from extender.cli import kubectl, rows
from extender.kube import list_objects


def register(commands: Any) -> None:
    parser = commands.add_parser("podgroup", help="list PodGroups")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = verbs.add_parser("list", help="the PodGroups of a namespace (-A: of every one)")
    kubectl.add_connection_flags(listing, namespaced=True)
    listing.add_argument("-A", "--all-namespaces", action="store_true")
    kubectl.add_output_flag(listing)
    listing.set_defaults(run=_list)


def _list(args: argparse.Namespace) -> int:
    with kubectl.connect(args) as cluster:
        namespace = None if args.all_namespaces else cluster.namespace
        groups = list_objects(cluster.api, API_VERSION, "PodGroup", namespace=namespace)
    groups.sort(key=lambda g: (g["metadata"].get("namespace", ""), g["metadata"]["name"]))
    if args.output in ("json", "yaml"):
        print(kubectl.dump([kubectl.clean(g) for g in groups], args.output, "PodGroup"))
        return 0
    if not groups:
        where = "any namespace" if args.all_namespaces else f"namespace {cluster.namespace}"
        print(f"No PodGroups found in {where}.")
        return 0
    wide = args.output == "wide"
    header = rows.headers(
        rows.GROUP_HEADERS, (), rows.GROUP_WIDE, namespaced=args.all_namespaces, wide=wide
    )
    body = [rows.group_row(g, namespaced=args.all_namespaces, wide=wide) for g in groups]
    print(kubectl.table(header, body))
    return 0
