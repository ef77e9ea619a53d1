"""`lahar certs`: the certificates for mutual TLS between kube-scheduler and the extender in a
cluster. `issue` (the extender's init container, then with --every its sidecar) fills or renews
the two Secrets and writes the extender's serving pair and client CA into a folder; `fetch`
(kube-scheduler's init container, then its sidecar) waits for the scheduler's client certificate
and writes it where its extender tlsConfig points. Both rewrite a file only when it changed.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from extender.cli.flags import add_certificate_flags, certificate_hosts, duration_seconds
from extender.kube import KubeError, client_for
from extender.pki import CertOptions
from extender.server.certificates import (
    IssueOptions,
    client_files,
    fetch,
    issue,
    server_files,
    write_files,
)

log = logging.getLogger("extender.certs")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "certs", help="issue or fetch the certificates of kube-scheduler's mTLS with the extender"
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    issuer = verbs.add_parser(
        "issue", help="fill or renew the Secrets; write the extender's files (its init container)"
    )
    _common(issuer)
    add_certificate_flags(
        issuer, service="lahar-extender", stored_in="lahar-extender-tls", serving="extender's"
    )
    issuer.add_argument(
        "--trust-grace",
        default="720h",
        help="how long a new CA is trusted before it signs (default 30 days: kube-scheduler "
        "reads the CAs it trusts at start, so restart it within that time)",
    )
    issuer.add_argument(
        "--scheduler-secret",
        default="lahar-scheduler-tls",
        help="Secret holding kube-scheduler's client certificate",
    )
    issuer.add_argument(
        "--scheduler-name",
        default="lahar-scheduler",
        help="common name of kube-scheduler's client certificate",
    )
    issuer.set_defaults(run=_issue)
    fetcher = verbs.add_parser(
        "fetch",
        help="wait for kube-scheduler's client certificate and write it (its init container)",
    )
    _common(fetcher)
    fetcher.add_argument(
        "--secret-name", default="lahar-scheduler-tls", help="Secret to read the pair from"
    )
    fetcher.add_argument(
        "--timeout", default="10m", help="how long to wait for the Secret to be filled"
    )
    fetcher.set_defaults(run=_fetch)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: the pod's ServiceAccount)"
    )
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "lahar-system"),
        help="namespace of the Secrets (default $POD_NAMESPACE, else lahar-system)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="folder to write tls.crt, tls.key and ca.crt to"
    )
    parser.add_argument(
        "--every",
        default="",
        help="keep running and do it again at this interval (a sidecar: files are rewritten "
        "when the certificates change; the extender and kube-scheduler reload them)",
    )


def _issue(args: argparse.Namespace) -> int:
    hosts = certificate_hosts(args, "certs issue")
    validity = duration_seconds("certs issue", "cert-validity", args.cert_validity)
    ca_validity = duration_seconds("certs issue", "ca-validity", args.ca_validity)
    grace = duration_seconds("certs issue", "trust-grace", args.trust_grace)
    options = IssueOptions(
        certs=CertOptions(
            hosts=hosts,
            ca_validity=datetime.timedelta(seconds=ca_validity),
            cert_validity=datetime.timedelta(seconds=validity),
            grace=datetime.timedelta(seconds=grace),
            ca_name="lahar-extender-ca",
        ),
        namespace=args.namespace,
        extender_secret=args.secret_name,
        scheduler_secret=args.scheduler_secret,
        scheduler_name=args.scheduler_name,
    )

    def once(api: k8s.ApiClient) -> None:
        bundle, _ = issue(api, options)
        write_files(args.out, server_files(bundle))

    return _repeat(args, "certs issue", once)


def _fetch(args: argparse.Namespace) -> int:
    timeout = duration_seconds("certs fetch", "timeout", args.timeout)

    def once(api: k8s.ApiClient) -> None:
        pair = fetch(api, args.namespace, args.secret_name, timeout=timeout)
        write_files(args.out, client_files(pair))

    return _repeat(args, "certs fetch", once)


def _repeat(args: argparse.Namespace, command: str, once: Callable[[k8s.ApiClient], None]) -> int:
    """Run `once`; with --every, again at that interval for as long as the pod lives (a failed
    round is logged and tried again at the next)."""
    every = duration_seconds(command, "every", args.every) if args.every else None
    with closing(client_for(args.kubeconfig)) as api:
        once(api)
        while every is not None:
            time.sleep(every)
            try:
                once(api)
            except KubeError as error:
                log.warning("%s: %s; trying again in %s", command, error, args.every)
    return 0
