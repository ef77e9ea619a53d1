"""`lahar controller`: run the Job controller (Volcano's batch.volcano.sh/v1alpha1 Jobs, for the
schedulers named by `--scheduler-name`, and the Commands aimed at Jobs and Queues), and, with
`--hypernode-labels`, keep the HyperNodes built from node labels in step with the nodes (checked
at start: a bad label key or a tier name too many ends the command naming the flag)."""

from __future__ import annotations

import argparse
import logging
from contextlib import closing
from typing import Any

from extender.api.topology_labels import LabelTier
from extender.cli.flags import (
    add_lease_flags,
    add_scheduler_name_flags,
    add_server_flags,
    lease_options,
    scheduler_names,
)
from extender.controller.app import ControllerOptions, make_app
from extender.controller.hypernodes import parse_tiers
from extender.kube import client_for
from extender.shell import run

log = logging.getLogger("extender.controller")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "controller", help="run the Job controller (Volcano-compatible vcjobs)"
    )
    add_server_flags(parser, port=8080, serves="/healthz, /readyz and /metrics")
    parser.add_argument(
        "--workers", type=int, default=4, help="jobs reconciled at the same time (default 4)"
    )
    add_lease_flags(parser, lease="lahar-controller", acts="reconciles")
    add_scheduler_name_flags(
        parser,
        what="this controller",
        does="it reconciles only the Jobs of these names and creates their pods behind Lahar's "
        "gate until their gang goes; a Job naming no scheduler counts as the first name, which "
        "the webhook given the same names writes into it; a Job for another scheduler gets no "
        "pods, PodGroup or status, and its Commands are left alone (Commands aimed at a Queue "
        "are performed whatever the names)",
    )
    parser.add_argument(
        "--hypernode-labels",
        default="",
        metavar="LABEL,...",
        help="keep Volcano HyperNodes built from these node labels, the nearest tier first "
        "(e.g. rack,spine), in step with the nodes, as `lahar hypernodes build --apply` builds "
        "them once (default: none, no HyperNodes written)",
    )
    parser.add_argument(
        "--hypernode-tier-names",
        default="",
        metavar="NAME,...",
        help="the tiers' names, in --hypernode-labels' order (default: each tier's label)",
    )
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise SystemExit("lahar controller: --workers must be at least 1")
    tiers = hypernode_tiers(args.hypernode_labels, args.hypernode_tier_names)
    names = scheduler_names(args, "controller")
    api = client_for(args.kubeconfig)
    options = ControllerOptions(
        workers=args.workers,
        lease=lease_options(args),
        scheduler_names=names,
        hypernode_tiers=tiers,
    )
    app = make_app(api, options)
    log.info("serving probes and metrics on %s:%d", args.host, args.port)
    with closing(api):
        return run(app, host=args.host, port=args.port)


def hypernode_tiers(labels: str, names: str) -> tuple[LabelTier, ...]:
    """The tiers of --hypernode-labels and --hypernode-tier-names (none without the first);
    exits naming the flag at fault."""
    if not labels and not names:
        return ()
    try:
        return parse_tiers(labels, names)
    except ValueError as error:
        raise SystemExit(f"lahar controller: {error}") from None
