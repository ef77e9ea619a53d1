"""`lahar serve`: run the scheduler extender the stock kube-scheduler calls.

Two forms. The default runs beside kube-scheduler, as a second container of its pod: the verbs
listen on 127.0.0.1 only (nothing outside the pod can call them, so they need no TLS), the probes
and metrics on `--probe-port` on every address, and it follows the scheduler's own Lease
(`--follow-scheduler-lease`): it does the work only while the scheduler beside it leads. The other
runs as its own Deployment behind a Service, for a kube-scheduler whose pod is not yours: HTTPS
with client certificates (`--tls-cert-file`, `--client-ca-file`) and a Lease of its own
(`--leader-elect`).

Following the scheduler's Lease, a ready standby evicts the pod whose scheduler holds it once that
pod's `extender` container has not been ready for `--take-over-after` seconds (20; 0: never), so
that a leader whose extender cannot serve does not stall gang scheduling (`server.takeover`).

The leader records how long each finished gang ran in the ConfigMap
`lahar-system/lahar-run-times`, which `lahar whatif` reads (`server.run_times_writer`);
`--no-record-run-times` turns that off.
"""

from __future__ import annotations

import argparse
import logging
import socket
from contextlib import closing
from pathlib import Path
from typing import Any

import yaml

from extender.api.run_times import HISTORY_NAME, HISTORY_NAMESPACE
from extender.cli.flags import (
    ALL_ADDRESSES,
    add_lease_flags,
    add_served_scheduler_flags,
    add_server_flags,
    add_tls_file_flags,
    lease_options,
    non_negative_seconds,
    served_schedulers,
    tls_files,
)
from extender.framework.policy import Policy, load_policy
from extender.framework.scheduler_config import config_problems, profile_names
from extender.kube import client_for
from extender.kube.leader import FollowOptions
from extender.plugins import REGISTRY
from extender.server.app import make_app
from extender.server.tls import ServerTls, TlsFiles
from extender.shell import run

log = logging.getLogger("extender.serve")
DEFAULT_POLICY = Path("/etc/lahar/policy/lahar.yaml")
TAKE_OVER_AFTER = 20.0  # seconds a leader's extender may stay not ready (--take-over-after)


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "serve", help="run the scheduler extender (filter, preempt, bind; prioritize)"
    )
    add_server_flags(
        parser,
        port=8888,
        serves="the extender's verbs (loopback: beside kube-scheduler in its pod)",
        host="127.0.0.1",
    )
    parser.add_argument(
        "--probe-port",
        type=int,
        help="also serve /healthz, /readyz and /metrics (nothing else) on this port of "
        "--probe-host, for the kubelet and Prometheus when the verbs listen on loopback",
    )
    parser.add_argument(
        "--probe-host", default=ALL_ADDRESSES, help=f"address of --probe-port ({ALL_ADDRESSES})"
    )
    parser.add_argument(
        "--policy",
        type=Path,
        default=None,
        help=f"Lahar's policy file (default: policy/lahar.yaml here, else {DEFAULT_POLICY})",
    )
    parser.add_argument(
        "--scheduler-config",
        type=Path,
        help="the KubeSchedulerConfiguration of the kube-scheduler that calls this extender: "
        "checked against the policy at start (resource fit in-tree, binpack weights, verbs, "
        "timeouts), and its profiles are the schedulers served",
    )
    add_served_scheduler_flags(parser, does="whose gangs Lahar lets in before they are asked about")
    add_tls_file_flags(parser, serves="HTTPS")
    parser.add_argument(
        "--client-ca-file",
        type=Path,
        help="with HTTPS: verb calls must carry a client certificate this CA signed (mTLS with "
        "kube-scheduler's extender tlsConfig); probes and /metrics need none",
    )
    parser.add_argument(
        "--follow-scheduler-lease",
        metavar="NAMESPACE/NAME",
        help="beside kube-scheduler in its pod: work while the scheduler holds this Lease (its "
        "holder identity starts with --scheduler-identity), instead of holding a Lease of its "
        "own (--leader-elect is then ignored)",
    )
    parser.add_argument(
        "--scheduler-identity",
        default=socket.gethostname(),
        help="the hostname kube-scheduler names itself by in its Lease (default: this host's "
        "name, which every container of a pod shares)",
    )
    parser.add_argument(
        "--take-over-after",
        metavar="SECONDS",
        type=non_negative_seconds,
        default=TAKE_OVER_AFTER,
        help="with --follow-scheduler-lease, on a ready standby: evict the pod whose scheduler "
        "holds the Lease once its `extender` container has not been ready for this long, so "
        "that this replica's scheduler takes over (Eviction API; default "
        f"{TAKE_OVER_AFTER:g}; 0: never)",
    )
    parser.add_argument(
        "--record-run-times",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="on the leader, record how long each finished gang ran in the ConfigMap "
        f"{HISTORY_NAMESPACE}/{HISTORY_NAME}, which `lahar whatif` reads (default: on)",
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


def _follow(args: argparse.Namespace) -> FollowOptions | None:
    if args.follow_scheduler_lease is None:
        return None
    namespace, _, name = args.follow_scheduler_lease.partition("/")
    if not namespace or not name or "/" in name:
        raise SystemExit(
            "lahar serve: --follow-scheduler-lease: expected NAMESPACE/NAME, e.g. "
            f"lahar-system/lahar-scheduler; got {args.follow_scheduler_lease!r}"
        )
    return FollowOptions(name, namespace, args.scheduler_identity)


def _schedulers(args: argparse.Namespace, policy: Policy) -> frozenset[str]:
    """The schedulers served: --served-scheduler's, else the configuration's profiles (checked
    against the policy first: any problem stops the start, naming the field), else Lahar's."""
    if args.scheduler_config is None:
        return served_schedulers(args)
    path: Path = args.scheduler_config
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise SystemExit(
            f"lahar serve: --scheduler-config {path}: cannot read it: {error}"
        ) from None
    if not isinstance(config, dict):
        raise SystemExit(f"lahar serve: --scheduler-config {path}: not a YAML mapping")
    found = config_problems(config, policy, str(path))
    if found:
        raise SystemExit(
            "lahar serve: the scheduler configuration does not fit the policy:\n  "
            + "\n  ".join(found)
        )
    return frozenset(args.served_schedulers or profile_names(config))


def _serve(args: argparse.Namespace) -> int:
    policy_path = args.policy or default_policy()
    policy = load_policy(policy_path, REGISTRY)
    schedulers = _schedulers(args, policy)
    follow = _follow(args)
    tls = _tls(args)
    api = client_for(args.kubeconfig)
    probes = (args.probe_host, args.probe_port) if args.probe_port is not None else None
    app = make_app(
        policy,
        api=api,
        tls=tls,
        lease=None if follow is not None else lease_options(args),
        follow=follow,
        schedulers=schedulers,
        probes=probes,
        take_over_after=args.take_over_after if follow is not None else 0.0,
        record_run_times=args.record_run_times,
    )
    plugins = ", ".join(p.name for p in policy.plugins)
    log.info(
        "policy %s: plugins %s; serving %s", policy_path, plugins, ", ".join(sorted(schedulers))
    )
    scheme = "HTTP" if tls is None else "HTTPS"
    log.info("serving the extender over %s on %s:%d", scheme, args.host, args.port)
    with closing(api):
        return run(
            app, host=args.host, port=args.port, ssl_context=None if tls is None else tls.context
        )
