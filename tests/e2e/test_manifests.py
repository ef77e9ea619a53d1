"""The install bundles: `manifests/` (the default: the extender beside Lahar's kube-scheduler) and
`manifests/extender-service/` (the standalone extender behind a Service, over mutual TLS) render
with `kubectl kustomize` (kubectl built from the same Go module as the control plane), the real
API server accepts every object (server-side dry-run: no kubelet runs the Deployments here), the
pod templates are hardened (every pod admitted into a namespace enforcing Pod Security's
`restricted` standard, with its priority class), the NetworkPolicies let in only what each
component needs, the dev cluster runs the components with the flags the Deployments give them,
and the certificates the standalone form's init containers issue and fetch (`lahar certs`, as the
extender's and kube-scheduler's ServiceAccounts) carry mutual TLS between them.

The Helm chart's tests (test_chart.py) render and check the chart with the helpers here."""

from __future__ import annotations

import contextlib
import copy
import re
import secrets
import socket
import ssl
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
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
from extender.devcluster.pki import Pki
from extender.kube import KubeError, apply_object, connect, delete, read, wait_until
from extender.kube.tokens import service_account_token
from extender.server.tls import ServerTls, TlsFiles
from extender.webhook.conditions import CONDITION, expression

EXPECTED = {  # the default install (the CRDs are manifests/crds/, kept when Lahar is removed)
    "Namespace": 1,
    "CustomResourceDefinition": 0,
    "ServiceAccount": 3,
    "Deployment": 3,
    "Service": 3,
    "PodDisruptionBudget": 3,
    "MutatingWebhookConfiguration": 1,
    "ValidatingWebhookConfiguration": 1,
    "ConfigMap": 2,
    "Secret": 1,
    "NetworkPolicy": 3,
}
SERVICE_FORM = {
    **EXPECTED,
    "ServiceAccount": 3,
    "Service": 4,
    "PodDisruptionBudget": 2,
    "Secret": 3,
    "NetworkPolicy": 3,
}
PRIORITY_CLASS = "system-cluster-critical"  # every component's: without any of them, no gang runs
POD_SECURITY = {  # the namespace's labels: Pod Security Admission's restricted standard, enforced
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}


def render(folder: Path) -> list[dict[str, Any]]:
    kubectl = devcluster.ensure_binaries(quiet=True).kubectl
    out = subprocess.run(
        [str(kubectl), "kustomize", str(folder)], capture_output=True, text=True, check=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(manifests_dir())


@pytest.fixture(scope="module")
def service_form() -> list[dict[str, Any]]:
    return render(manifests_dir() / "extender-service")


def deployments(rendered: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}


def test_the_kustomization_renders_every_part_of_the_install(
    rendered: list[dict[str, Any]], service_form: list[dict[str, Any]]
) -> None:
    kinds = Counter(doc["kind"] for doc in rendered)
    assert {kind: kinds[kind] for kind in EXPECTED} == EXPECTED
    assert set(deployments(rendered)) == {"lahar-controller", "lahar-webhook", "lahar-scheduler"}
    config = next(d for d in rendered if d["metadata"]["name"].startswith("lahar-scheduler-conf"))
    policy = (manifests_dir() / "base" / "policy" / "kube-scheduler-config.yaml").read_text()
    assert config["data"]["kube-scheduler-config.yaml"] == policy
    kinds = Counter(doc["kind"] for doc in service_form)
    assert {kind: kinds[kind] for kind in SERVICE_FORM} == SERVICE_FORM
    assert set(deployments(service_form)) == {
        "lahar-controller",
        "lahar-webhook",
        "lahar-extender",
    }


def test_the_crds_are_a_kustomization_of_their_own_with_every_served_api() -> None:
    crds = render(manifests_dir() / "crds")
    assert {doc["kind"] for doc in crds} == {"CustomResourceDefinition"}
    assert sorted(doc["metadata"]["name"] for doc in crds) == [
        "commands.bus.volcano.sh",
        "hypernodes.topology.volcano.sh",
        "jobs.batch.volcano.sh",
        "podgroups.scheduling.volcano.sh",
        "podgroups.scheduling.x-k8s.io",
        "queues.scheduling.volcano.sh",
    ]


# docs/migrating.md's overlay for Lahar beside a running Volcano (the image set, the component).
BESIDE_VOLCANO = """\
resources:
  - ../manifests
components:
  - ../manifests/beside-volcano
images:
  - {name: lahar, newName: registry.example.com/lahar, newTag: "0.1.0"}
"""


@pytest.fixture(scope="module")
def beside_volcano(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("beside-volcano")
    (folder / "manifests").symlink_to(manifests_dir())
    (folder / "lahar").mkdir()
    (folder / "lahar" / "kustomization.yaml").write_text(BESIDE_VOLCANO)
    return render(folder / "lahar")


def test_beside_volcano_lahar_answers_to_lahar_only_and_leaves_jobs_to_volcano(
    beside_volcano: list[dict[str, Any]], rendered: list[dict[str, Any]]
) -> None:
    assert BESIDE_VOLCANO in (manifests_dir().parent / "docs" / "migrating.md").read_text()
    beside = deployments(beside_volcano)
    assert beside["lahar-controller"]["spec"]["replicas"] == 0
    webhook = beside["lahar-webhook"]["spec"]["template"]["spec"]["containers"][0]
    assert webhook["args"] == ["webhook", "--scheduler-name=lahar"]
    (config_map,) = [
        d for d in beside_volcano if d["metadata"]["name"].startswith("lahar-scheduler-conf")
    ]
    config = yaml.safe_load(config_map["data"]["kube-scheduler-config.yaml"])
    assert [p["schedulerName"] for p in config["profiles"]] == ["lahar"]
    (shipped_map,) = [
        d for d in rendered if d["metadata"]["name"].startswith("lahar-scheduler-conf")
    ]
    shipped = yaml.safe_load(shipped_map["data"]["kube-scheduler-config.yaml"])
    # the shipped configuration but for the profile `volcano`
    assert config == {
        **shipped,
        "profiles": [p for p in shipped["profiles"] if p["schedulerName"] != "volcano"],
    }
    assert {d["kind"] for d in beside_volcano} == {d["kind"] for d in rendered}
    # The pod webhook's names as the webhook itself writes them: no apply conflicts with it.
    (hooks,) = [d for d in beside_volcano if d["kind"] == "MutatingWebhookConfiguration"]
    conditions = [c for h in hooks["webhooks"] for c in h.get("matchConditions") or []]
    (names,) = [c["expression"] for c in conditions if c["name"] == CONDITION]
    assert names == expression(["lahar"])


def test_the_documented_overlay_runs_the_preemption_policy(tmp_path: Path) -> None:
    guide = (manifests_dir().parent / "docs" / "operations.md").read_text()
    found = re.search(r"\*\*Preemption, opt-in\.\*\*.*?```yaml\n(.*?)```", guide, re.S)
    assert found is not None
    (tmp_path / "manifests").symlink_to(manifests_dir())
    (tmp_path / "lahar").mkdir()
    (tmp_path / "lahar" / "kustomization.yaml").write_text(found.group(1))
    rendered = render(tmp_path / "lahar")
    spec = deployments(rendered)["lahar-scheduler"]["spec"]["template"]["spec"]
    extender = next(c for c in spec["containers"] if c["name"] == "extender")
    assert "--policy=/etc/lahar/policy/preemption.yaml" in extender["args"]
    assert not [a for a in extender["args"] if a == "--policy=/etc/lahar/policy/lahar.yaml"]
    (policies,) = [d for d in rendered if d["metadata"]["name"].startswith("lahar-policy")]
    assert sorted(policies["data"]) == ["lahar.yaml", "preemption.yaml"]


def test_the_extender_beside_the_scheduler_listens_on_loopback_and_follows_its_lease(
    rendered: list[dict[str, Any]],
) -> None:
    spec = deployments(rendered)["lahar-scheduler"]["spec"]["template"]["spec"]
    scheduler, extender = spec["containers"]
    assert spec["serviceAccountName"] == "lahar-scheduler"  # (the extender runs with it too)
    args = dict(a.split("=", 1) for a in extender["args"][1:])
    assert extender["args"][0] == "serve"
    assert args["--host"] == "127.0.0.1"
    assert "--tls-cert-file" not in args and "--client-ca-file" not in args
    assert [p["containerPort"] for p in extender["ports"]] == [int(args["--probe-port"])]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "config"]
    (config_map,) = [d for d in rendered if d["metadata"]["name"] == volume["configMap"]["name"]]
    config = yaml.safe_load(config_map["data"]["kube-scheduler-config.yaml"])
    (wired,) = config["extenders"]
    assert wired["urlPrefix"] == f"http://127.0.0.1:{args['--port']}"
    election = config["leaderElection"]
    lease = f"{election['resourceNamespace']}/{election['resourceName']}"
    assert args["--follow-scheduler-lease"] == lease
    mounted = {m["name"]: m["mountPath"] for m in extender["volumeMounts"]}
    assert args["--scheduler-config"] == f"{mounted['config']}/kube-scheduler-config.yaml"
    assert _flags(scheduler["command"]) >= {"--config"}


def fresh(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as a first install would create it: the dev cluster's webhook configurations call
    loopback URLs (nothing routes Services here), and an apply over them would merge the
    manifest's Service into their URL, so those two are tried under another name."""
    if doc["kind"] not in {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}:
        return doc
    metadata = {**doc["metadata"], "name": doc["metadata"]["name"] + "-dry-run"}
    return {**doc, "metadata": metadata}


def server_dry_run(
    cluster: devcluster.DevCluster, documents: list[dict[str, Any]], folder: Path
) -> subprocess.CompletedProcess[str]:
    """`kubectl apply --server-side --dry-run=server` of `documents` (each `fresh`) on `cluster`:
    the API server validates and admits every object as it would on an install."""
    kubectl = devcluster.ensure_binaries(quiet=True).kubectl
    bundle = folder / "lahar.yaml"
    bundle.write_text(yaml.safe_dump_all([fresh(doc) for doc in documents]))
    return subprocess.run(
        [
            str(kubectl),
            f"--kubeconfig={cluster.kubeconfig}",
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


@pytest.mark.parametrize("form", ["rendered", "service_form", "beside_volcano"])
def test_the_api_server_accepts_every_object(
    dev_cluster: devcluster.DevCluster,
    request: pytest.FixtureRequest,
    form: str,
    tmp_path: Path,
) -> None:
    documents: list[dict[str, Any]] = request.getfixturevalue(form)
    result = server_dry_run(dev_cluster, documents, tmp_path)
    assert result.returncode == 0, result.stderr
    accepted = [line for line in result.stdout.splitlines() if "(server dry run)" in line]
    assert len(accepted) == len(documents), result.stdout


@contextlib.contextmanager
def namespace_like(api: k8s.ApiClient, documents: list[dict[str, Any]], name: str) -> Iterator[str]:
    """A new namespace `name` labelled as `documents`' Namespace, with their ServiceAccounts (a
    pod naming a ServiceAccount that does not exist is refused before Pod Security is asked)."""
    (shipped,) = [d for d in documents if d["kind"] == "Namespace"]
    labels = shipped["metadata"]["labels"]
    apply_object(
        api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    )
    try:
        for account in (d for d in documents if d["kind"] == "ServiceAccount"):
            apply_object(api, {**account, "metadata": {**account["metadata"], "namespace": name}})
        yield name
    finally:
        delete(api, "v1", "Namespace", name)


def pod_answers(
    api: k8s.ApiClient, documents: list[dict[str, Any]], namespace: str
) -> dict[str, str]:
    """What the API server answers to a create (server-side dry run) of each Deployment's pod in
    `namespace`: Pod Security Admission and priority admission run as on a real create. Per
    Deployment, "admitted, priority N" or the refusal."""
    answers = {}
    for name, deployment in deployments(documents).items():
        template = deployment["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": template["metadata"]["labels"],
            },
            "spec": template["spec"],
        }
        try:
            stored = apply_object(api, pod, dry_run=True)
        except KubeError as error:
            answers[name] = str(error)
            continue
        answers[name] = f"admitted, priority {stored['spec'].get('priority')}"
    return answers


def as_root(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`documents` with every pod running as root, which the restricted standard forbids."""
    changed = copy.deepcopy(documents)
    for doc in changed:
        if doc["kind"] == "Deployment":
            doc["spec"]["template"]["spec"]["securityContext"] = {"runAsUser": 0}
    return changed


CRITICAL = "admitted, priority 2000000000"  # system-cluster-critical's value


@pytest.mark.parametrize(
    ("form", "root", "expected"),
    [
        (
            "rendered",
            False,
            dict.fromkeys(["lahar-controller", "lahar-webhook", "lahar-scheduler"], CRITICAL),
        ),
        (
            "service_form",
            False,
            dict.fromkeys(["lahar-controller", "lahar-webhook", "lahar-extender"], CRITICAL),
        ),
        # The check can fail: the same pods as root are refused, naming the standard.
        (
            "rendered",
            True,
            dict.fromkeys(
                ["lahar-controller", "lahar-webhook", "lahar-scheduler"],
                'violates PodSecurity "restricted:latest"',
            ),
        ),
    ],
)
def test_every_pod_passes_the_restricted_pod_security_standard_with_its_priority_class(
    api: k8s.ApiClient,
    request: pytest.FixtureRequest,
    form: str,
    root: bool,
    expected: dict[str, str],
) -> None:
    documents: list[dict[str, Any]] = request.getfixturevalue(form)
    (shipped,) = [d for d in documents if d["kind"] == "Namespace"]
    assert shipped["metadata"]["labels"].items() >= POD_SECURITY.items()
    name = f"pod-security-{secrets.token_hex(3)}"
    with namespace_like(api, documents, name):
        answers = pod_answers(api, as_root(documents) if root else documents, name)
    found = {
        pod: next((e for e in expected.values() if e in answer), answer)
        for pod, answer in answers.items()
    }
    assert found == expected, answers


PROMETHEUS = "Prometheus"  # the pods labelled app.kubernetes.io/name=prometheus, in any namespace
ANYWHERE = "any address"
INGRESS = {  # (form, Deployment) -> each port its pods accept connections on, and from whom
    ("rendered", "lahar-controller"): {8080: PROMETHEUS},  # /metrics
    ("rendered", "lahar-webhook"): {8443: ANYWHERE},  # the API server's calls, /metrics
    ("rendered", "lahar-scheduler"): {8889: PROMETHEUS},  # the extender's /metrics
    ("service_form", "lahar-controller"): {8080: PROMETHEUS},
    ("service_form", "lahar-webhook"): {8443: ANYWHERE},
    ("service_form", "lahar-extender"): {8888: ANYWHERE},  # kube-scheduler (mTLS), /metrics
}
PROMETHEUS_PEER = [
    {
        "namespaceSelector": {},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }
]


def admitted(documents: list[dict[str, Any]], labels: dict[str, str]) -> dict[int, str]:
    """The ports the NetworkPolicies of `documents` open on a pod labelled `labels`, and to whom."""
    ports: dict[int, str] = {}
    for policy in (d for d in documents if d["kind"] == "NetworkPolicy"):
        selector = policy["spec"]["podSelector"]["matchLabels"]
        if not selector.items() <= labels.items():
            continue
        assert policy["spec"]["policyTypes"] == ["Ingress"], policy  # egress open: the API server
        for rule in policy["spec"]["ingress"]:
            peers = rule.get("from")
            who = (
                ANYWHERE
                if peers is None
                else PROMETHEUS
                if peers == PROMETHEUS_PEER
                else str(peers)
            )
            for port in rule["ports"]:
                assert port["protocol"] == "TCP"
                ports[port["port"]] = who
    return ports


@pytest.mark.parametrize(("form", "name"), sorted(INGRESS))
def test_the_network_policies_let_in_only_what_each_component_needs(
    request: pytest.FixtureRequest, form: str, name: str
) -> None:
    documents: list[dict[str, Any]] = request.getfixturevalue(form)
    template = deployments(documents)[name]["spec"]["template"]
    ports = admitted(documents, template["metadata"]["labels"])
    assert ports == INGRESS[form, name]
    listening = {
        p["containerPort"] for c in template["spec"]["containers"] for p in c.get("ports", [])
    }
    assert set(ports) <= listening
    assert int(template["metadata"]["annotations"]["prometheus.io/port"]) in ports  # scraped
    # Each Service in front of these pods reaches a port open to its callers.
    for service in (d for d in documents if d["kind"] == "Service"):
        if service["spec"]["selector"].items() <= template["metadata"]["labels"].items():
            for port in service["spec"]["ports"]:
                target = _named_port(template, port["targetPort"])
                assert target in ports, (service["metadata"]["name"], port)


def _named_port(template: dict[str, Any], name: str) -> int:
    containers = template["spec"]["containers"]
    return next(
        int(p["containerPort"]) for c in containers for p in c.get("ports", []) if p["name"] == name
    )


def _containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    spec = deployment["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize(
    ("form", "name"),
    [
        ("rendered", "lahar-controller"),
        ("rendered", "lahar-webhook"),
        ("rendered", "lahar-scheduler"),
        ("service_form", "lahar-extender"),
    ],
)
def test_every_pod_is_hardened_probed_and_sized(
    request: pytest.FixtureRequest, form: str, name: str
) -> None:
    deployment = deployments(request.getfixturevalue(form))[name]
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == name
    assert spec["priorityClassName"] == PRIORITY_CLASS
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
    for container in spec["containers"]:  # the components (not the certificate sidecars)
        if container["name"] in {"renew-certs"}:
            continue
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert "livenessProbe" in container


def _mounts(container: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}


def test_a_scheduler_wired_to_the_service_finds_its_certificates_where_they_are_written() -> None:
    """The standalone form's scheduler configuration names the files `lahar certs fetch`
    writes (tls.crt, tls.key, ca.crt in one folder)."""
    config = yaml.safe_load(
        (manifests_dir() / "base" / "policy" / "kube-scheduler-config-service.yaml").read_text()
    )
    (extender,) = config["extenders"]
    files = {Path(path).name for path in extender["tlsConfig"].values()}
    assert len({Path(path).parent for path in extender["tlsConfig"].values()}) == 1
    assert files == {"tls.crt", "tls.key", "ca.crt"}
    assert extender["urlPrefix"] == "https://lahar-extender.lahar-system.svc:8888"


def _flags(args: list[str]) -> set[str]:
    return {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}


# Flags only the dev cluster gives: where to reach the cluster, loopback addresses and ports,
# shorter checks, and the namespace (a pod has it from $POD_NAMESPACE).
LOCAL = {
    "--kubeconfig",
    "--host",
    "--port",
    "--probe-port",
    "--namespace",
    "--lease-namespace",
    "--extra-host",
    "--check-interval",
}


def _container(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == name)


@pytest.mark.parametrize(
    ("deployment", "container", "process"),
    [
        ("lahar-scheduler", "extender", "lahar"),
        ("lahar-controller", "controller", "lahar-controller"),
        ("lahar-webhook", "webhook", "lahar-webhook"),
    ],
)
def test_the_dev_cluster_runs_each_component_as_its_deployment_does(
    dev_cluster: devcluster.DevCluster,
    rendered: list[dict[str, Any]],
    deployment: str,
    container: str,
    process: str,
) -> None:
    shipped = _container(deployments(rendered)[deployment], container)
    running = next(p.argv for p in dev_cluster.state.processes if p.name == process)
    command = running[running.index("extender.cli.main") + 1]
    assert command == shipped["args"][0]
    flags = _flags(shipped["args"]) - {"--leader-elect"}  # the default, said explicitly
    assert flags - LOCAL == _flags(running) - LOCAL


def test_the_service_form_runs_as_its_deployment_does(
    service_form: list[dict[str, Any]],
) -> None:
    """The standalone extender's flags, as `lahar dev-cluster` and the e2e tests run it."""
    shipped = _container(deployments(service_form)["lahar-extender"], "extender")
    keys = Pki(Path("/pki"), {})
    argv = lahar.extender_argv(
        Path("k"), Path("p"), 1, probes=2, scheduler_config=Path("c"), keys=keys
    )
    assert _flags(shipped["args"]) - LOCAL == _flags(argv) - LOCAL


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
    service_form: list[dict[str, Any]],
    tmp_path: Path,
) -> tuple[Path, Path]:
    """The standalone form's certificate Secrets as shipped (empty; data an issuer wrote stays)
    and kubeconfigs of the extender's and the scheduler's ServiceAccounts, as their init
    containers run."""
    for secret in (d for d in service_form if d["kind"] == "Secret"):
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
