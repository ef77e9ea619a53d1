"""`lahar queue list|create|open|close|delete`: Volcano Queues.

list prints the queue tree, each queue under its parent with its share against what it deserves;
create takes `--parent` to put a queue under another. open and close set the queue's
`status.state` (Open; Closing, which Lahar turns Closed once none of its PodGroups, or of the
queues under it, is pending, inqueue, running or unknown), as the README's kubectl patch does."""

from __future__ import annotations

import argparse
from typing import Any

from extender.api.quantity import parse_quantity
from extender.api.scheduling import API_VERSION
from extender.cli import kubectl, rows
from extender.kube import KubeError, delete, read
from extender.kube.reports import create_queue, patch_queue_status


def register(commands: Any) -> None:
    parser = commands.add_parser("queue", help="list, create, open, close or delete Queues")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    kubectl.add_list(
        verbs, _list, help="every Queue with its state and PodGroup counts", namespaced=False
    )
    creating = verbs.add_parser("create", help="create a Queue")
    kubectl.add_name(creating)
    creating.add_argument("--weight", type=int, default=1, help="its share weight (default 1)")
    creating.add_argument(
        "--capability",
        default="",
        help="what it may be allocated at most, e.g. cpu=8,memory=16Gi (default: no cap)",
    )
    creating.add_argument(
        "--parent", default="", help="the queue it goes under (default: the top level, root)"
    )
    creating.add_argument(
        "--reclaimable",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="whether queues below their share may reclaim from it (default yes)",
    )
    kubectl.add_connection_flags(creating, namespaced=False)
    creating.set_defaults(run=_create)
    for verb, state in (("open", "Open"), ("close", "Closing")):
        acting = verbs.add_parser(verb, help=f"{verb} a Queue (status.state {state})")
        kubectl.add_name(acting)
        kubectl.add_connection_flags(acting, namespaced=False)
        acting.set_defaults(run=_set_state, state=state)
    deleting = verbs.add_parser("delete", help="delete a Queue")
    kubectl.add_name(deleting)
    kubectl.add_connection_flags(deleting, namespaced=False)
    deleting.set_defaults(run=_delete)


def _list(args: argparse.Namespace) -> int:
    return kubectl.print_list(
        args, API_VERSION, "Queue", rows.queue_headers, rows.queue_row, arrange=rows.queue_rows
    )


def capability(text: str) -> dict[str, str]:
    """`cpu=8,memory=16Gi` as a ResourceList; a ValueError names the part that is wrong."""
    amounts: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name or not value:
            raise ValueError(f"--capability: {part!r} is not NAME=QUANTITY")
        try:
            parse_quantity(value)
        except ValueError as error:
            raise ValueError(f"--capability: {name}: {error}") from None
        amounts[name] = value
    return amounts


def _create(args: argparse.Namespace) -> int:
    if args.weight < 1:
        raise SystemExit("lahar queue create: --weight must be at least 1")
    try:
        cap = capability(args.capability)
    except ValueError as error:
        raise SystemExit(f"lahar queue create: {error}") from None
    body = {
        "apiVersion": API_VERSION,
        "kind": "Queue",
        "metadata": {"name": args.name},
        "spec": {"weight": args.weight, "reclaimable": args.reclaimable}
        | ({"capability": cap} if cap else {})
        | ({"parent": args.parent} if args.parent else {}),
    }
    with kubectl.connect(args) as cluster:
        if not create_queue(cluster.api, body):
            raise KubeError(f"Queue {args.name} already exists")
    print(f"queue {args.name} created")
    return 0


def _set_state(args: argparse.Namespace) -> int:
    with kubectl.connect(args) as cluster:
        if read(cluster.api, API_VERSION, "Queue", args.name) is None:
            raise KubeError(f"Queue {args.name} not found")
        patch_queue_status(cluster.api, args.name, {"state": args.state})
    print(f"queue {args.name}: state {args.state}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with kubectl.connect(args) as cluster:
        if not delete(cluster.api, API_VERSION, "Queue", args.name):
            raise KubeError(f"Queue {args.name} not found")
    print(f"queue {args.name} deleted")
    return 0
