"""`lahar certs`: the certificates for mutual TLS between kube-scheduler and the extender in a
cluster. `issue` (the extender's init container) fills or renews the two Secrets and writes the
extender's serving pair and client CA into a folder; `fetch` (kube-scheduler's init container)
waits for the scheduler's client certificate and writes it where its extender tlsConfig points.
"""

from __future__ import annotations

import argparse
import datetime
import os
from contextlib import closing
from pathlib import Path
from typing import Any

from extender.cli.flags import add_certificate_flags, certificate_hosts, duration_seconds
from extender.kube import client_for
from extender.pki import CertOptions
from extender.server.certificates import (
    IssueOptions,
    client_files,
    fetch,
    issue,
    server_files,
    write_files,
)


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


def _issue(args: argparse.Namespace) -> int:
    hosts = certificate_hosts(args, "certs issue")
    validity = duration_seconds("certs issue", "cert-validity", args.cert_validity)
    ca_validity = duration_seconds("certs issue", "ca-validity", args.ca_validity)
    options = IssueOptions(
        certs=CertOptions(
            hosts=hosts,
            ca_validity=datetime.timedelta(seconds=ca_validity),
            cert_validity=datetime.timedelta(seconds=validity),
            ca_name="lahar-extender-ca",
        ),
        namespace=args.namespace,
        extender_secret=args.secret_name,
        scheduler_secret=args.scheduler_secret,
        scheduler_name=args.scheduler_name,
    )
    with closing(client_for(args.kubeconfig)) as api:
        bundle, _ = issue(api, options)
    write_files(args.out, server_files(bundle))
    return 0


def _fetch(args: argparse.Namespace) -> int:
    timeout = duration_seconds("certs fetch", "timeout", args.timeout)
    with closing(client_for(args.kubeconfig)) as api:
        pair = fetch(api, args.namespace, args.secret_name, timeout=timeout)
    write_files(args.out, client_files(pair))
    return 0
