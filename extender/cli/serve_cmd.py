"""`lahar serve`: run the scheduler extender the stock kube-scheduler calls."""

from __future__ import annotations

import argparse
import logging
import os
import socket
from contextlib import closing
from pathlib import Path
from typing import Any

from aiohttp import web

from extender.cli.flags import add_server_flags
from extender.framework.policy import load_policy
from extender.kube import client_for
from extender.kube.leader import LeaseOptions
from extender.plugins import REGISTRY
from extender.server.app import make_app
from extender.server.keys import LEASE_LOST
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
    parser.add_argument(
        "--tls-cert-file", type=Path, help="serve HTTPS with this certificate (PEM)"
    )
    parser.add_argument("--tls-key-file", type=Path, help="and this key (PEM)")
    parser.add_argument(
        "--client-ca-file",
        type=Path,
        help="with HTTPS: verb calls must carry a client certificate this CA signed (mTLS with "
        "kube-scheduler's extender tlsConfig); probes and /metrics need none",
    )
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="hold a Lease so that one replica serves at a time; standbys are not ready "
        "(default on)",
    )
    parser.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "lahar-system"),
        help="namespace of the Lease (default $POD_NAMESPACE, else lahar-system)",
    )
    parser.add_argument("--lease-name", default="lahar-extender", help="name of the Lease")
    parser.set_defaults(run=_serve)


def _tls(args: argparse.Namespace) -> ServerTls | None:
    if args.tls_cert_file is None and args.tls_key_file is None:
        if args.client_ca_file is not None:
            raise SystemExit(
                "lahar serve: --client-ca-file needs --tls-cert-file and --tls-key-file"
            )
        return None
    if args.tls_cert_file is None or args.tls_key_file is None:
        raise SystemExit("lahar serve: give both --tls-cert-file and --tls-key-file")
    try:
        return ServerTls(TlsFiles(args.tls_cert_file, args.tls_key_file, args.client_ca_file))
    except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
        raise SystemExit(f"lahar serve: the TLS files do not load: {error}") from None


def default_policy() -> Path:
    checkout = Path(__file__).resolve().parents[2] / "policy" / "lahar.yaml"
    return checkout if checkout.is_file() else DEFAULT_POLICY


def _serve(args: argparse.Namespace) -> int:
    policy_path = args.policy or default_policy()
    policy = load_policy(policy_path, REGISTRY)
    tls = _tls(args)
    lease = None
    if args.leader_elect:
        identity = f"{socket.gethostname()}_{os.getpid()}"
        lease = LeaseOptions(args.lease_name, args.lease_namespace, identity)
    api = client_for(args.kubeconfig)
    app = make_app(policy, api=api, tls=tls, lease=lease)
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
    if app[LEASE_LOST].is_set():
        log.error("stopped after losing the Lease; restart to stand by again")
        return 1
    return 0
