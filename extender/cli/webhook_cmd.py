"""`lahar webhook`: the admission webhook for Lahar's Jobs, Queues and PodGroups, over TLS.

By default it manages its own certificates (a CA and a serving certificate in a Secret every
replica shares, the CA published into the webhook configurations, rotated before they end); with
`--tls-cert-file` and `--tls-key-file` it serves those files instead (reloaded when they change).

`--scheduler-name` (repeatable, as Volcano's webhook-manager has it) names the schedulers it
serves, by default `lahar` and `volcano`, the profiles Lahar ships: their gang pods are gated and
their Jobs defaulted and checked, a Job naming no scheduler gets the first name, and the pod
webhook's `matchConditions` are kept to these names (`webhook.conditions`), so the API server
calls it for their pods only. A name is a DNS subdomain, as Kubernetes asks of a schedulerName.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from extender.admission.admit import Settings
from extender.cli.flags import (
    add_certificate_flags,
    add_scheduler_name_flags,
    add_server_flags,
    add_tls_file_flags,
    certificate_hosts,
    duration_seconds,
    scheduler_names,
    tls_files,
)
from extender.kube import KubeError, client_for
from extender.pki import CertOptions
from extender.shell import run
from extender.webhook.app import make_app
from extender.webhook.tls import ServingCertificate, TlsOptions

log = logging.getLogger("extender.webhook")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "webhook", help="run the admission webhook (Jobs, Queues, PodGroups; gang pods' gate)"
    )
    add_server_flags(parser, port=8443, serves="the webhook, /healthz, /readyz and /metrics")
    add_scheduler_name_flags(
        parser,
        what="this webhook",
        does="their gang pods (but a Volcano Job's) are created behind Lahar's gate, their Jobs "
        "get Volcano's defaults "
        "and rules, a Job naming no scheduler gets the first name; pods and Jobs of any other "
        "scheduler are admitted untouched. The pod webhook's matchConditions are kept to these "
        "names",
    )
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "lahar-system"),
        help="namespace of the webhook's Service and certificate Secret "
        "(default $POD_NAMESPACE, else lahar-system)",
    )
    add_certificate_flags(
        parser, service="lahar-webhook", stored_in="lahar-webhook-tls", serving="serving"
    )
    parser.add_argument(
        "--webhook-configuration",
        default="lahar-webhook",
        help="name of the Mutating and Validating webhook configurations whose caBundle "
        "and scheduler names (matchCondition lahar-scheduler) this webhook keeps (default "
        "lahar-webhook)",
    )
    parser.add_argument(
        "--check-interval", default="1m", help="how often certificates are checked (default 1m)"
    )
    parser.add_argument(
        "--trust-grace",
        default="2m",
        help="how long a new CA is trusted in the caBundle before it signs the serving "
        "certificate (default 2m: the API server sees the new caBundle first)",
    )
    add_tls_file_flags(parser, serves="these files instead of self-managed certificates")
    parser.add_argument(
        "--ca-bundle-file",
        type=Path,
        help="with the files: publish this CA as the configurations' caBundle",
    )
    parser.set_defaults(run=_run)


def _duration(flag: str, text: str) -> datetime.timedelta:
    return datetime.timedelta(seconds=duration_seconds("webhook", flag, text))


def configurations(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """(kind, name) of the webhook configurations this webhook keeps."""
    config = args.webhook_configuration
    return (
        ("MutatingWebhookConfiguration", config),
        ("ValidatingWebhookConfiguration", config),
    )


def tls_options(args: argparse.Namespace) -> TlsOptions:
    pair = tls_files(args, "webhook")
    hosts = certificate_hosts(args, "webhook")
    certs = CertOptions(
        hosts=hosts,
        ca_validity=datetime.timedelta(
            seconds=duration_seconds("webhook", "ca-validity", args.ca_validity)
        ),
        cert_validity=datetime.timedelta(
            seconds=duration_seconds("webhook", "cert-validity", args.cert_validity)
        ),
        grace=datetime.timedelta(
            seconds=duration_seconds("webhook", "trust-grace", args.trust_grace)
        ),
    )
    return TlsOptions(
        certs=certs,
        stored_in=(args.namespace, args.secret_name),
        configurations=configurations(args),
        cert_file=pair[0] if pair else None,
        key_file=pair[1] if pair else None,
        ca_file=args.ca_bundle_file,
        interval=duration_seconds("webhook", "check-interval", args.check_interval),
    )


def _first_certificate(tls: ServingCertificate) -> None:
    """The server needs a certificate before it listens: keep trying while the API is away."""
    delay = 1.0
    while True:
        try:
            tls.install(tls.refresh())
            return
        except (KubeError, OSError, ValueError) as error:  # OSError: ssl.SSLError too
            log.warning("no certificate yet (%s); trying again in %.0f s", error, delay)
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


def _run(args: argparse.Namespace) -> int:
    names = scheduler_names(args, "webhook")
    options = tls_options(args)
    api = client_for(args.kubeconfig)
    with closing(api):
        tls = ServingCertificate(api, options)
        try:
            _first_certificate(tls)
            settings = Settings.serving(names)
            app = make_app(api, tls, settings)
            log.info(
                "serving admission reviews over TLS on %s:%d for the schedulers %s (a Job naming "
                "none gets %s)",
                args.host,
                args.port,
                ", ".join(names),
                names[0],
            )
            return run(app, host=args.host, port=args.port, ssl_context=tls.context)
        finally:
            tls.close()
