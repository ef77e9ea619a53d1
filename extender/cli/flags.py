"""Flags the long-running commands share: how to reach the cluster, where to listen, the Lease
that makes one replica act at a time, and a certificate pair to serve."""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

from extender.admission.names import dns_subdomain
from extender.api.duration import parse_duration
from extender.api.scheduling import SERVED_SCHEDULERS
from extender.kube.leader import LeaseOptions
from extender.pki import service_hosts

ALL_ADDRESSES = "0.0.0.0"  # noqa: S104 - the scheduler, probes and Prometheus use the pod network


def add_server_flags(
    parser: argparse.ArgumentParser, *, port: int, serves: str, host: str = ALL_ADDRESSES
) -> None:
    """--kubeconfig, --host (default `host`) and --port (default `port`) for a command serving
    `serves`."""
    parser.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: the pod's ServiceAccount)"
    )
    parser.add_argument("--host", default=host, help=f"address of {serves} (default {host})")
    parser.add_argument("--port", type=int, default=port, help=f"port of {serves} (default {port})")


def add_lease_flags(parser: argparse.ArgumentParser, *, lease: str, acts: str) -> None:
    """--leader-elect (default on), --lease-namespace and --lease-name (default `lease`)."""
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"hold a Lease so that one replica {acts} at a time; standbys are not ready "
        "(default on)",
    )
    parser.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "lahar-system"),
        help="namespace of the Lease (default $POD_NAMESPACE, else lahar-system)",
    )
    parser.add_argument("--lease-name", default=lease, help=f"name of the Lease (default {lease})")


def lease_options(args: argparse.Namespace) -> LeaseOptions | None:
    """The Lease this process competes for (its identity: host and pid), or None without
    leader election."""
    if not args.leader_elect:
        return None
    identity = f"{socket.gethostname()}_{os.getpid()}"
    return LeaseOptions(args.lease_name, args.lease_namespace, identity)


def add_served_scheduler_flags(parser: argparse.ArgumentParser, *, does: str) -> None:
    """--served-scheduler (repeatable): the schedulerNames Lahar serves, for which `does`."""
    parser.add_argument(
        "--served-scheduler",
        action="append",
        dest="served_schedulers",
        metavar="NAME",
        help=f"a schedulerName Lahar's kube-scheduler answers to, {does} (repeatable; default: "
        f"{', '.join(SERVED_SCHEDULERS)}, the profiles of policy/kube-scheduler-config.yaml)",
    )


def served_schedulers(args: argparse.Namespace) -> frozenset[str]:
    return frozenset(args.served_schedulers or SERVED_SCHEDULERS)


def add_scheduler_name_flags(parser: argparse.ArgumentParser, *, what: str, does: str) -> None:
    """--scheduler-name (repeatable; --served-scheduler is the same flag), as Volcano's
    components have it: the schedulerNames `what` serves, for which it `does`."""
    parser.add_argument(
        "--scheduler-name",
        "--served-scheduler",
        action="append",
        dest="scheduler_names",
        metavar="NAME",
        help=f"a schedulerName {what} serves (repeatable; default: "
        f"{' and '.join(SERVED_SCHEDULERS)}, the profiles of policy/kube-scheduler-config.yaml): "
        f"{does}. (--served-scheduler is the same flag.)",
    )


def scheduler_names(args: argparse.Namespace, command: str) -> tuple[str, ...]:
    """The names of --scheduler-name in the order given (repeats dropped), the defaults when none
    is given; exits naming one that is not a DNS subdomain (which a schedulerName is)."""
    names = tuple(dict.fromkeys(args.scheduler_names or SERVED_SCHEDULERS))
    for name in names:
        if (reason := dns_subdomain(name)) is not None:
            raise SystemExit(
                f"lahar {command}: --scheduler-name {name!r}: {reason} (a schedulerName is a DNS "
                "subdomain)"
            )
    return names


def add_tls_file_flags(parser: argparse.ArgumentParser, *, serves: str) -> None:
    """--tls-cert-file and --tls-key-file: a certificate pair (PEM) to serve `serves` with."""
    parser.add_argument("--tls-cert-file", type=Path, help=f"serve {serves} with this certificate")
    parser.add_argument("--tls-key-file", type=Path, help="and this key (PEM)")


def tls_files(args: argparse.Namespace, command: str) -> tuple[Path, Path] | None:
    """The pair given, or None; one without the other is an error naming both flags."""
    if args.tls_cert_file is None and args.tls_key_file is None:
        return None
    if args.tls_cert_file is None or args.tls_key_file is None:
        raise SystemExit(f"lahar {command}: give both --tls-cert-file and --tls-key-file")
    return args.tls_cert_file, args.tls_key_file


def duration_seconds(command: str, flag: str, text: str) -> float:
    """A positive duration flag (`90s`, `1h30m`, `8760h`) in seconds; exits naming the flag."""
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise SystemExit(f"lahar {command}: --{flag}: {error}") from None
    if seconds <= 0:
        raise SystemExit(f"lahar {command}: --{flag} must be positive, got {text}")
    return seconds


def non_negative_seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more (`20`, `2.5`)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not seconds >= 0 or seconds == float("inf"):  # (also refuses nan)
        raise argparse.ArgumentTypeError(f"expected 0 or more seconds, got {text!r}")
    return seconds


def add_certificate_flags(
    parser: argparse.ArgumentParser, *, service: str, stored_in: str, serving: str
) -> None:
    """--service-name, --extra-host, --secret-name, --cert-validity and --ca-validity: where a
    self-managed CA and `serving` certificate live and the names the certificate carries."""
    parser.add_argument("--service-name", default=service, help=f"the Service (default {service})")
    parser.add_argument(
        "--extra-host",
        action="append",
        default=[],
        help="another DNS name or IP the serving certificate names (repeatable)",
    )
    parser.add_argument(
        "--secret-name",
        default=stored_in,
        help=f"Secret holding the CA and the {serving} certificate (default {stored_in})",
    )
    parser.add_argument(
        "--cert-validity", default="8760h", help=f"{serving} certificate lifetime (default 1 year)"
    )
    parser.add_argument("--ca-validity", default="87600h", help="CA lifetime (default 10 years)")


def certificate_hosts(args: argparse.Namespace, command: str) -> tuple[str, ...]:
    """The names the serving certificate carries: the Service's and --extra-host's."""
    try:
        return service_hosts(args.service_name, args.namespace, args.extra_host)
    except ValueError as error:
        raise SystemExit(f"lahar {command}: --extra-host (or --service-name): {error}") from None
