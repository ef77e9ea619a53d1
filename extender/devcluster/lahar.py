"""Lahar on the dev cluster: a second stock kube-scheduler configured by
`policy/kube-scheduler-config.yaml` with its extender (`lahar serve`) beside it, the Job controller
(`lahar controller`) and the admission webhook (`lahar webhook`), the way a user's cluster runs
them (`manifests/`).

The cluster's own kube-scheduler keeps serving `default-scheduler`; the second one serves the
`lahar` and `volcano` profiles and calls the extender on loopback, plain HTTP, at the port the
extender got, as in its pod. It holds its Lease lahar-system/lahar-scheduler as in a cluster, and
the extender follows it. With `service` the extender runs as the standalone form instead
(`manifests/extender-service/`): HTTPS with client certificates from the dev cluster's CA, a Lease
of its own, and the scheduler configured by `kube-scheduler-config-service.yaml`'s wiring.

The webhook configurations of `manifests/base/webhook.yaml` are applied as they are, except that
each webhook is called at its loopback URL instead of through the Service (nothing routes Service
addresses here); the webhook fills in their caBundle itself. The extender, the controller, the
webhook and the second kube-scheduler run with tokens of their ServiceAccounts (the extender with
the scheduler's, as in its pod; the standalone one with its own), bound to their roles by the
manifests' RBAC as applied to a cluster, so a missing rule or binding fails the tests as it would
fail a user. Each runs with the flags its Deployment in `manifests/` gives it, bar addresses,
ports and files (tests/e2e/test_manifests.py keeps that true).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from extender.devcluster import configs, health
from extender.devcluster.child_processes import ProcessRecord
from extender.devcluster.errors import DevClusterError
from extender.devcluster.pki import Pki
from extender.kube import apply_object, connect, load_manifests, wait_established
from extender.kube.tokens import service_account_token

PORTS = ("lahar", "lahar-probes", "lahar-scheduler", "lahar-controller", "lahar-webhook")
CRD_FILES = (
    "crds/crd-scheduling.yaml",
    "crds/crd-coscheduling.yaml",
    "crds/crd-batch.yaml",
    "crds/crd-bus.yaml",
    "crds/crd-topology.yaml",
)
NAMESPACE_FILE = "base/namespace.yaml"
NAMESPACE = "lahar-system"
# Each component's ServiceAccount (in lahar-system) -> its RBAC manifest, and its kubeconfig's name.
EXTENDER, CONTROLLER, WEBHOOK = "lahar-extender", "lahar-controller", "lahar-webhook"
SCHEDULER = "lahar-scheduler"  # the stock kube-scheduler run for Lahar (manifests/scheduler.yaml)
SCHEDULER_LEASE = f"{NAMESPACE}/lahar-scheduler"  # the Lease the extender beside it follows
# Both forms' RBAC: the extender's role, the components', the scheduler's (which the extender
# beside it shares) and the standalone extender's own ServiceAccount.
RBAC_FILES = (
    "base/extender-rbac.yaml",
    "base/controller-rbac.yaml",
    "base/webhook-rbac.yaml",
    "scheduler-rbac.yaml",
    "extender-service/extender-rbac.yaml",
)
KUBECONFIGS = {
    EXTENDER: "lahar",
    CONTROLLER: "lahar-controller",
    WEBHOOK: "lahar-webhook",
    SCHEDULER: "lahar-scheduler",
}
TOKEN_SECONDS = 30 * 24 * 3600  # a dev cluster kept up (`--keep`) lives days, not months
WEBHOOK_FILE = "base/webhook.yaml"


def install_crds(
    kubeconfig: Path, manifests: Path, timeout: float, *, extra: tuple[Path, ...] = ()
) -> None:
    """The CRDs every dev cluster serves (Volcano's PodGroup, Queue, Job and Command, and
    Coscheduling's PodGroup) and the `extra` ones, Established before anyone watches, and
    Lahar's namespace."""
    crds = load_manifests(*(manifests / name for name in CRD_FILES), *extra)
    with connect(kubeconfig) as api:
        for item in [*load_manifests(manifests / NAMESPACE_FILE), *crds]:
            apply_object(api, item.body, source=item.source)
        wait_established(api, [crd.name for crd in crds], timeout)


def install_rbac(kubeconfig: Path, manifests: Path) -> None:
    """Every object of the components' RBAC manifests: their ServiceAccounts, roles and bindings."""
    with connect(kubeconfig) as api:
        for file in RBAC_FILES:
            for item in load_manifests(manifests / file):
                apply_object(api, item.body, source=item.source)


def component_kubeconfigs(
    kubeconfig: Path, state_dir: Path, server: str, ca_cert: Path
) -> dict[str, Path]:
    """A kubeconfig per component with a token of its own ServiceAccount (TokenRequest, as a
    kubelet would mount one), by ServiceAccount name."""
    written = {}
    with connect(kubeconfig) as api:
        for account, stem in KUBECONFIGS.items():
            token = service_account_token(api, NAMESPACE, account, TOKEN_SECONDS)
            user = f"system:serviceaccount:{NAMESPACE}:{account}"
            written[account] = configs.write_yaml(
                state_dir / f"{stem}.kubeconfig",
                [configs.kubeconfig(server, ca_cert, user, token)],
                private=True,
            )
    return written


def install_webhooks(kubeconfig: Path, manifests: Path, port: int) -> None:
    """The webhook configurations (each webhook called at https://127.0.0.1:<port><its path>)
    and the rest of the file (the certificates' Secret)."""
    with connect(kubeconfig) as api:
        for item in load_manifests(manifests / WEBHOOK_FILE):
            body = loopback_webhooks(item.body, port) if "webhooks" in item.body else item.body
            apply_object(api, body, source=item.source)


def loopback_webhooks(config: dict[str, Any], port: int) -> dict[str, Any]:
    hooks = []
    for hook in config.get("webhooks") or []:
        service = (hook.get("clientConfig") or {}).get("service") or {}
        if "path" not in service:
            raise DevClusterError(f"webhook {hook.get('name')}: clientConfig.service.path missing")
        url = f"https://127.0.0.1:{port}{service['path']}"
        hooks.append({**hook, "clientConfig": {"url": url}})
    return {**config, "webhooks": hooks}


def lahar_argv(command: str, kubeconfig: Path, port: int, *flags: str) -> list[str]:
    """`lahar <command>` as this Python runs it, on loopback at `port`, with `flags`."""
    return [
        sys.executable,
        "-m",
        "extender.cli.main",
        command,
        f"--kubeconfig={kubeconfig}",
        "--host=127.0.0.1",
        f"--port={port}",
        *flags,
    ]


def webhook_argv(kubeconfig: Path, port: int) -> list[str]:
    return lahar_argv(
        "webhook",
        kubeconfig,
        port,
        "--namespace=lahar-system",
        "--extra-host=127.0.0.1",
        "--extra-host=localhost",
        # Short checks, so a caBundle lost in a test is restored within seconds.
        "--check-interval=5s",
    )


def controller_argv(kubeconfig: Path, port: int) -> list[str]:
    return lahar_argv("controller", kubeconfig, port, "--lease-namespace=lahar-system")


def extender_argv(
    kubeconfig: Path,
    policy: Path,
    port: int,
    *,
    probes: int,
    scheduler_config: Path,
    keys: Pki | None = None,
) -> list[str]:
    """`lahar serve` beside the scheduler: the verbs on loopback, plain HTTP, following the
    scheduler's Lease, its configuration checked (`manifests/scheduler.yaml`); with `keys`, the
    standalone form instead: HTTPS, verb calls only from a client the cluster CA certified
    (mTLS), a Lease of its own (`manifests/extender-service/extender.yaml`)."""
    flags = [f"--policy={policy}", f"--probe-port={probes}"]
    if keys is None:
        flags += [
            f"--scheduler-config={scheduler_config}",
            f"--follow-scheduler-lease={SCHEDULER_LEASE}",
        ]
    else:
        flags += [
            f"--tls-cert-file={keys.extender_cert}",
            f"--tls-key-file={keys.extender_key}",
            f"--client-ca-file={keys.ca_cert}",
            "--leader-elect",
            f"--lease-namespace={NAMESPACE}",
        ]
    return lahar_argv("serve", kubeconfig, port, *flags)


def scheduler_config(
    policy: Path, kubeconfig: Path, extender_port: int, keys: Pki | None = None
) -> dict[str, Any]:
    """Lahar's KubeSchedulerConfiguration for this cluster: its kubeconfig, its own Lease (as
    in a cluster), and the extender at its port on loopback; with `keys`, over mutual TLS
    (`enableHTTPS`, `tlsConfig` with the scheduler's client certificate and the CA the
    extender's certificate is checked against)."""
    config = configs.scheduler_config_for_cluster(
        configs.load_scheduler_config(policy), kubeconfig, elect=True
    )
    extenders = config.get("extenders") or []
    if not extenders:
        raise DevClusterError(f"scheduler config {policy}: field extenders is empty")
    wire: dict[str, Any] = {"urlPrefix": f"http://127.0.0.1:{extender_port}", "enableHTTPS": False}
    if keys is not None:
        files = {
            "certFile": str(keys.scheduler_client_cert),
            "keyFile": str(keys.scheduler_client_key),
            "caFile": str(keys.ca_cert),
        }
        wire = {
            "urlPrefix": f"https://127.0.0.1:{extender_port}",
            "enableHTTPS": True,
            "tlsConfig": files,
        }
    config["extenders"] = [
        {**{k: v for k, v in extender.items() if k != "tlsConfig"}, **wire}
        for extender in extenders
    ]
    return config


def wait_ready(record: ProcessRecord, port: int, timeout: float, *, tls: bool = False) -> None:
    """The extender, the controller or the webhook (`tls`) answers /readyz (its cache synced;
    the controller leads; the webhook published its caBundle)."""
    scheme = "https" if tls else "http"
    health.wait_healthy(record, f"{scheme}://127.0.0.1:{port}/readyz", timeout=timeout)
