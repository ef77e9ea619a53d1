"""`lahar serve`: run the scheduler extender the stock kube-scheduler calls."""

from __future__ import annotations

import argparse
import logging
from contextlib import closing
from pathlib import Path
from typing import Any

from aiohttp import web

from extender.cli.flags import add_server_flags
from extender.framework.policy import load_policy
from extender.kube import client_for
from extender.plugins import REGISTRY
from extender.server.app import make_app

log = logging.getLogger("extender.serve")
DEFAULT_POLICY = Path("/etc/lahar/policy/lahar.yaml")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "serve", help="run the scheduler extender (filter, prioritize, preempt, bind)"
    )
    add_server_flags(parser, port=8888, serves="the extender's verbs, probes and metrics")
    parser.add_argument(
        "--policy",
        type=Path,
        default=None,
        help=f"Lahar's policy file (default: policy/lahar.yaml here, else {DEFAULT_POLICY})",
    )
    parser.set_defaults(run=_serve)


def default_policy() -> Path:
    checkout = Path(__file__).resolve().parents[2] / "policy" / "lahar.yaml"
    return checkout if checkout.is_file() else DEFAULT_POLICY


def _serve(args: argparse.Namespace) -> int:
    policy_path = args.policy or default_policy()
    policy = load_policy(policy_path, REGISTRY)
    api = client_for(args.kubeconfig)
    app = make_app(policy, api=api)
    plugins = ", ".join(p.name for p in policy.plugins)
    log.info("policy %s: plugins %s", policy_path, plugins)
    log.info("serving the extender on %s:%d", args.host, args.port)
    with closing(api):
        web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)
    return 0
