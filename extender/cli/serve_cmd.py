"""`lahar serve`: run the scheduler extender the stock kube-scheduler calls."""

from __future__ import annotations

import argparse
import logging
from contextlib import closing
from pathlib import Path
from typing import Any

from aiohttp import web

from extender.cli.flags import (
    add_lease_flags,
    add_server_flags,
    add_tls_file_flags,
    lease_options,
    tls_files,
)
from extender.framework.policy import load_policy
from extender.kube import client_for
from extender.plugins import REGISTRY
from extender.server.app import make_app
from extender.server.keys import FAILED_TASKS, LEASE_LOST
from extender.server.tls import ServerTls, TlsFiles

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
    add_tls_file_flags(parser, serves="HTTPS")
    parser.add_argument(
        "--client-ca-file",
        type=Path,
        help="with HTTPS: verb calls must carry a client certificate this CA signed (mTLS with "
        "kube-scheduler's extender tlsConfig); probes and /metrics need none",
    )
    add_lease_flags(parser, lease="lahar-extender", acts="serves")
    parser.set_defaults(run=_serve)


def _tls(args: argparse.Namespace) -> ServerTls | None:
    pair = tls_files(args, "serve")
    if pair is None:
        if args.client_ca_file is not None:
            raise SystemExit("lahar serve: --client-ca-file needs --tls-cert-file/--tls-key-file")
        return None
    try:
        return ServerTls(TlsFiles(*pair, args.client_ca_file))
    except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
        raise SystemExit(f"lahar serve: the TLS files do not load: {error}") from None


def default_policy() -> Path:
    checkout = Path(__file__).resolve().parents[2] / "policy" / "lahar.yaml"
    return checkout if checkout.is_file() else DEFAULT_POLICY


def _serve(args: argparse.Namespace) -> int:
    policy_path = args.policy or default_policy()
    policy = load_policy(policy_path, REGISTRY)
    tls = _tls(args)
    api = client_for(args.kubeconfig)
    app = make_app(policy, api=api, tls=tls, lease=lease_options(args))
    plugins = ", ".join(p.name for p in policy.plugins)
    log.info("policy %s: plugins %s", policy_path, plugins)
    scheme = "HTTP" if tls is None else "HTTPS"
    log.info("serving the extender over %s on %s:%d", scheme, args.host, args.port)
    with closing(api):
        web.run_app(
            app,
            host=args.host,
            port=args.port,
            ssl_context=None if tls is None else tls.context,
            print=None,
            access_log=None,
        )
    failed: list[str] = app[FAILED_TASKS]
    if failed:
        log.error("stopped because background task %s failed", ", ".join(failed))
        return 1
    if app[LEASE_LOST].is_set():
        log.error("stopped after losing the Lease; restart to stand by again")
        return 1
    return 0
