"""`lahar controller`: run the Job controller (Volcano's batch.volcano.sh/v1alpha1 Jobs)."""

from __future__ import annotations

import argparse
import logging
import os
import socket
from contextlib import closing
from typing import Any

from aiohttp import web

from extender.cli.flags import add_server_flags
from extender.controller.app import RUNTIME, ControllerOptions, make_app
from extender.kube import client_for
from extender.kube.leader import LeaseOptions

log = logging.getLogger("extender.controller")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "controller", help="run the Job controller (Volcano-compatible vcjobs)"
    )
    add_server_flags(parser, port=8080, serves="/healthz, /readyz and /metrics")
    parser.add_argument(
        "--workers", type=int, default=4, help="jobs reconciled at the same time (default 4)"
    )
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="hold a Lease so that one replica reconciles at a time (default on)",
    )
    parser.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "lahar-system"),
        help="namespace of the Lease (default $POD_NAMESPACE, else lahar-system)",
    )
    parser.add_argument("--lease-name", default="lahar-controller", help="name of the Lease")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise SystemExit("lahar controller: --workers must be at least 1")
    lease = None
    if args.leader_elect:
        identity = f"{socket.gethostname()}_{os.getpid()}"
        lease = LeaseOptions(args.lease_name, args.lease_namespace, identity)
    api = client_for(args.kubeconfig)
    app = make_app(api, ControllerOptions(workers=args.workers, lease=lease))
    log.info("serving probes and metrics on %s:%d", args.host, args.port)
    with closing(api):
        web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)
    if app[RUNTIME].lost_lease:
        log.error("stopped after losing the Lease; restart to stand by again")
        return 1
    return 0
