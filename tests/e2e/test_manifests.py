"""The install bundle: `manifests/` renders with `kubectl kustomize` (kubectl built from the same
Go module as the control plane), the real API server accepts every object (server-side dry-run:
no kubelet runs the Deployments here), the pod templates are hardened, the dev cluster runs the
components with the flags the Deployments give them, and the certificates the init containers
issue and fetch (`lahar certs`, as the extender's and kube-scheduler's ServiceAccounts) carry
mutual TLS between them."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import lahar
from extender.devcluster.paths import manifests_dir
from extender.kube import KubeError, apply_object, connect, read, wait_until
from extender.kube.tokens import service_account_token
from extender.server.tls import ServerTls, TlsFiles

EXPECTED = {
    "Namespace": 1,
    "CustomResourceDefinition": 4,
    "ServiceAccount": 4,
    "Deployment": 4,
    "Service": 4,
    "PodDisruptionBudget": 2,
    "MutatingWebhookConfiguration": 1,
    "ValidatingWebhookConfiguration": 1,
    "ConfigMap": 2,
    "Secret": 3,
}


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    kubectl = devcluster.ensure_binaries(quiet=True).kubectl
    out = subprocess.run(
        [str(kubectl), "kustomize", str(manifests_dir())],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _deployments(rendered: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}


def test_the_kustomization_renders_every_part_of_the_install(
    rendered: list[dict[str, Any]],
) -> None:
    kinds = Counter(doc["kind"] for doc in rendered)
    assert {kind: kinds[kind] for kind in EXPECTED} == EXPECTED
    assert set(_deployments(rendered)) == {
        "lahar-extender",
        "lahar-controller",
        "lahar-webhook",
        "lahar-scheduler",
    }
    config = next(d for d in rendered if d["metadata"]["name"].startswith("lahar-scheduler-conf"))
    policy = (manifests_dir() / "policy" / "kube-scheduler-config.yaml").read_text()
    assert config["data"]["kube-scheduler-config.yaml"] == policy


def _fresh(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as a first install would create it: the dev cluster's webhook configurations call
    loopback URLs (nothing routes Services here), and an apply over them would merge the
    manifest's Service into their URL, so those two are tried under another name."""
    if doc["kind"] not in {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}:
        return doc
    metadata = {**doc["metadata"], "name": doc["metadata"]["name"] + "-dry-run"}
    return {**doc, "metadata": metadata}


def test_the_api_server_accepts_every_object(
    dev_cluster: devcluster.DevCluster, rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    kubectl = devcluster.ensure_binaries(quiet=True).kubectl
    bundle = tmp_path / "lahar.yaml"
    bundle.write_text(yaml.safe_dump_all([_fresh(doc) for doc in rendered]))
    result = subprocess.run(
        [
            str(kubectl),
            f"--kubeconfig={dev_cluster.kubeconfig}",
            "apply",
            "--server-side",
            "--dry-run=server",
            "--force-conflicts",
            "--field-manager=lahar-manifests-test",
            f"--filename={bundle}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    accepted = [line for line in result.stdout.splitlines() if "(server dry run)" in line]
    assert len(accepted) == len(rendered), result.stdout


def _containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    spec = deployment["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize(
    "name", ["lahar-extender", "lahar-controller", "lahar-webhook", "lahar-scheduler"]
)
def test_every_pod_is_hardened_probed_and_sized(rendered: list[dict[str, Any]], name: str) -> None:
    deployment = _deployments(rendered)[name]
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == name
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert deployment["spec"]["replicas"] >= 2
    for container in _containers(deployment):
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["readOnlyRootFilesystem"] is True
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
        assert "memory" in container["resources"]["limits"]
    main = spec["containers"][0]  # the component; the others are certificate sidecars
    assert main["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "livenessProbe" in main


def _mounts(container: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}


def test_the_schedulers_files_are_where_its_configuration_says(
    rendered: list[dict[str, Any]],
) -> None:
    spec = _deployments(rendered)["lahar-scheduler"]["spec"]["template"]["spec"]
    scheduler, *sidecars = spec["containers"]
    mounts = _mounts(scheduler)
    (flag,) = [arg for arg in scheduler["command"] if arg.startswith("--config=")]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "config"]
    (config_map,) = [d for d in rendered if d["metadata"]["name"] == volume["configMap"]["name"]]
    (key,) = config_map["data"]
    assert flag == f"--config={mounts['config']}/{key}"
    config = yaml.safe_load(config_map["data"][key])
    (extender,) = config["extenders"]
    files = {Path(path).name for path in extender["tlsConfig"].values()}
    assert {Path(path).parent for path in extender["tlsConfig"].values()} == {Path(mounts["tls"])}
    assert files == {"tls.crt", "tls.key", "ca.crt"}  # what `lahar certs fetch` writes
    for fetcher in [*spec["initContainers"], *sidecars]:
        assert fetcher["args"][:2] == ["certs", "fetch"]
        assert fetcher["args"][fetcher["args"].index("--out") + 1] == mounts["tls"]


def _flags(args: list[str]) -> set[str]:
    return {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}


# Flags only the dev cluster gives: where to reach the cluster, loopback addresses and ports,
# shorter checks, and the namespace (a pod has it from $POD_NAMESPACE).
LOCAL = {
    "--kubeconfig",
    "--host",
    "--port",
    "--namespace",
    "--lease-namespace",
    "--extra-host",
    "--check-interval",
}


@pytest.mark.parametrize(
    ("deployment", "process"),
    [
        ("lahar-extender", "lahar"),
        ("lahar-controller", "lahar-controller"),
        ("lahar-webhook", "lahar-webhook"),
    ],
)
def test_the_dev_cluster_runs_each_component_as_its_deployment_does(
    dev_cluster: devcluster.DevCluster,
    rendered: list[dict[str, Any]],
    deployment: str,
    process: str,
) -> None:
    container = _deployments(rendered)[deployment]["spec"]["template"]["spec"]["containers"][0]
    running = next(p.argv for p in dev_cluster.state.processes if p.name == process)
    command = running[running.index("extender.cli.main") + 1]
    assert command == container["args"][0]
    flags = _flags(container["args"]) - {"--leader-elect"}  # the default, said explicitly
    assert flags == _flags(running) - LOCAL


def _token_kubeconfig(
    api: k8s.ApiClient, cluster: devcluster.DevCluster, account: str, folder: Path
) -> Path:
    """A kubeconfig with a token of `account` (the pod's mounted token, in a cluster)."""
    token = service_account_token(api, lahar.NAMESPACE, account, 600)
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": account, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
    path = folder / f"{account}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def _lahar(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "extender.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> dict[str, Any]:
    """Connect `client` to a loopback server using `server`, checking the extender Service's
    name; the client certificate the server verified."""
    seen: dict[str, Any] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def serve() -> None:
            connection, _ = listener.accept()
            with server.wrap_socket(connection, server_side=True) as tls:
                seen.update(tls.getpeercert() or {})
                tls.sendall(b"ok")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with (
            socket.create_connection(listener.getsockname(), timeout=10) as raw,
            client.wrap_socket(raw, server_hostname="lahar-extender.lahar-system.svc") as tls,
        ):
            assert tls.recv(2) == b"ok"
        thread.join(timeout=10)
    return seen


@pytest.fixture
def identities(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    rendered: list[dict[str, Any]],
    tmp_path: Path,
) -> tuple[Path, Path]:
    """The certificate Secrets as shipped (empty; data an issuer wrote stays) and kubeconfigs of
    the extender's and the scheduler's ServiceAccounts, as their init containers run."""
    for secret in (d for d in rendered if d["kind"] == "Secret"):
        if secret["metadata"]["name"] in {"lahar-extender-tls", "lahar-scheduler-tls"}:
            apply_object(api, secret)
    return (
        _token_kubeconfig(api, dev_cluster, lahar.EXTENDER, tmp_path),
        _token_kubeconfig(api, dev_cluster, lahar.SCHEDULER, tmp_path),
    )


def test_the_init_containers_certificates_carry_mutual_tls(
    api: k8s.ApiClient, identities: tuple[Path, Path], tmp_path: Path
) -> None:
    extender, scheduler = identities
    served, client = tmp_path / "extender", tmp_path / "scheduler"
    issued = _lahar("certs", "issue", f"--kubeconfig={extender}", f"--out={served}")
    assert issued.returncode == 0, issued.stderr
    fetched = _lahar("certs", "fetch", f"--kubeconfig={scheduler}", f"--out={client}")
    assert fetched.returncode == 0, fetched.stderr
    before = read(api, "v1", "Secret", "lahar-extender-tls", lahar.NAMESPACE) or {}
    again = _lahar("certs", "issue", f"--kubeconfig={extender}", f"--out={served}")
    assert again.returncode == 0 and "current" in again.stderr, again.stderr
    after = read(api, "v1", "Secret", "lahar-extender-tls", lahar.NAMESPACE) or {}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    server = ServerTls(TlsFiles(served / "tls.crt", served / "tls.key", served / "ca.crt"))
    context = ssl.create_default_context(cafile=str(client / "ca.crt"))
    context.load_cert_chain(client / "tls.crt", client / "tls.key")
    peer = _handshake(server.context, context)
    assert (("commonName", "lahar-scheduler"),) in peer["subject"]

    # The scheduler reads its own Secret, never the one holding the CA's key.
    with connect(scheduler) as as_scheduler, pytest.raises(KubeError, match=r"(?i)forbidden"):
        read(as_scheduler, "v1", "Secret", "lahar-extender-tls", lahar.NAMESPACE)


def test_the_sidecars_rewrite_the_files_when_the_extender_renews(
    identities: tuple[Path, Path], tmp_path: Path
) -> None:
    extender, scheduler = identities
    client = tmp_path / "scheduler"
    issued = _lahar("certs", "issue", f"--kubeconfig={extender}", f"--out={tmp_path / 'x'}")
    assert issued.returncode == 0, issued.stderr
    command = [sys.executable, "-m", "extender.cli.main", "certs", "fetch"]
    sidecar = subprocess.Popen(
        [*command, f"--kubeconfig={scheduler}", f"--out={client}", "--every=1s"],
        stderr=subprocess.PIPE,
    )
    try:
        wait_until((client / "tls.crt").is_file, timeout=30, what="the first fetch")
        first = (client / "tls.crt").read_bytes()
        # The extender renews the client certificate (here: issued to another name).
        renamed = _lahar(
            "certs",
            "issue",
            f"--kubeconfig={extender}",
            f"--out={tmp_path / 'x'}",
            "--scheduler-name=lahar-scheduler-renewed",
        )
        assert renamed.returncode == 0, renamed.stderr
        wait_until(
            lambda: (client / "tls.crt").read_bytes() != first,
            timeout=30,
            what="the sidecar to write the renewed certificate",
        )
        cert = x509.load_pem_x509_certificate((client / "tls.crt").read_bytes())
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        assert [n.value for n in names] == ["lahar-scheduler-renewed"]
        assert sidecar.poll() is None  # still running
    finally:
        sidecar.terminate()
        sidecar.wait(timeout=10)
    restored = _lahar("certs", "issue", f"--kubeconfig={extender}", f"--out={tmp_path / 'x'}")
    assert restored.returncode == 0, restored.stderr
