"""`lahar podgroup list`: PodGroups with their phase, counts and (-o wide) the condition that
says why a gang waits."""

from __future__ import annotations

import argparse
from typing import Any

from extender.api.scheduling import API_VERSION
from extender.cli import kubectl, rows


def register(commands: Any) -> None:
    parser = commands.add_parser("podgroup", help="list PodGroups")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    kubectl.add_list(
        verbs, _list, help="the PodGroups of a namespace (-A: of every one)", namespaced=True
    )


def _list(args: argparse.Namespace) -> int:
    return kubectl.print_list(args, API_VERSION, "PodGroup", rows.group_headers, rows.group_row)
