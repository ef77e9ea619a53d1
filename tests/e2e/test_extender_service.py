"""The standalone form, for a kube-scheduler whose pod is not yours: `lahar serve` as a process of
its own over mutual TLS with a Lease of its own (`manifests/extender-service/`), and a
kube-scheduler wired by `policy/kube-scheduler-config-service.yaml` (`enableHTTPS`, `tlsConfig`
with the client certificate; here with a profile of its own, `lahar-service`, beside the dev
cluster's sidecar form). It schedules gangs whole; callers without the scheduler's client
certificate get nothing; a standby is not ready, refuses, and takes over when the leader dies."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import child_processes, configs, health, lahar
from extender.devcluster.paths import policy_dir
from extender.devcluster.pki import Pki, make_ca, make_leaf_cert
from extender.devcluster.ports import free_ports
from extender.kube import wait_until
from tests.e2e.conftest import NodeFactory, PodFactory, metric
from tests.e2e.gangs import bound, submit_gang, wait_bound

SCHEDULER = "lahar-service"  # the profile this form's kube-scheduler answers to
LEASE_SECONDS = 15  # LeaseOptions.lease_seconds
BIND = {"PodName": "x", "PodNamespace": "default", "PodUID": "x", "Node": "nowhere"}


@dataclass
class ServiceForm:
    state: devcluster.DevClusterState
    keys: Pki
    argv: list[str]  # the extender's command line
    extender: child_processes.ProcessRecord
    port: int
    probes: int

    def url(self, path: str, port: int | None = None) -> str:
        return f"https://127.0.0.1:{port or self.port}{path}"

    def context(self, *, client: bool = True) -> ssl.SSLContext:
        """Trusting the extender's certificate; with `client`, presenting the scheduler's."""
        context = ssl.create_default_context(cafile=str(self.keys.ca_cert))
        if client:
            context.load_cert_chain(self.keys.scheduler_client_cert, self.keys.scheduler_client_key)
        return context

    def forbidden(self, verb: str) -> float:
        url = f"http://127.0.0.1:{self.probes}/metrics"
        return metric(url, "lahar_extender_requests_total", verb=verb, result="forbidden")


def _extender(
    state: devcluster.DevClusterState, keys: Pki, port: int, probes: int
) -> tuple[list[str], child_processes.ProcessRecord]:
    argv = lahar.extender_argv(
        state.state_dir / f"{lahar.KUBECONFIGS[lahar.EXTENDER]}.kubeconfig",
        policy_dir() / "lahar.yaml",
        port,
        probes=probes,
        scheduler_config=policy_dir() / "kube-scheduler-config-service.yaml",
        keys=keys,
    )
    argv.append(f"--served-scheduler={SCHEDULER}")
    log = state.state_dir / "logs" / f"lahar-service-{port}.log"
    record, _ = child_processes.start(f"lahar-service-{port}", argv, log, die_with_parent=True)
    return argv, record


@pytest.fixture(scope="module")
def service_form(dev_cluster: devcluster.DevCluster) -> Iterator[ServiceForm]:
    state = dev_cluster.state
    keys = Pki(state.state_dir / "pki", {})
    port, probes, secure = free_ports(3)
    argv, extender = _extender(state, keys, port, probes)
    config = lahar.scheduler_config(
        policy_dir() / "kube-scheduler-config-service.yaml",
        state.state_dir / f"{lahar.KUBECONFIGS[lahar.SCHEDULER]}.kubeconfig",
        port,
        keys,
    )
    config["profiles"] = [{**config["profiles"][0], "schedulerName": SCHEDULER}]
    config["leaderElection"] = {"leaderElect": False}  # (its Lease is the sidecar form's)
    path = configs.write_yaml(state.state_dir / "lahar-service-scheduler.yaml", [config])
    kube_scheduler = next(p for p in state.processes if p.name == "lahar-scheduler").argv[0]
    scheduler, _ = child_processes.start(
        "lahar-service-scheduler",
        [kube_scheduler, f"--config={path}", "--bind-address=127.0.0.1", f"--secure-port={secure}"],
        state.state_dir / "logs" / "lahar-service-scheduler.log",
        die_with_parent=True,
    )
    form = ServiceForm(state, keys, argv, extender, port, probes)
    try:
        lahar.wait_ready(extender, probes, timeout=60)
        health.wait_healthy(scheduler, f"https://127.0.0.1:{secure}/healthz", timeout=60)
        yield form
    finally:
        for record in (scheduler, form.extender):
            if child_processes.is_running(record):
                child_processes.stop(record, timeout=10.0)


def _post(url: str, context: ssl.SSLContext, body: object = BIND) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_gangs_schedule_whole_through_the_service_form(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    service_form: ServiceForm,
) -> None:
    own_nodes(2, cpu="4")
    names = submit_gang(api, namespace, pod, "tls", 4, cpu="2", scheduler=SCHEDULER)
    wait_bound(api, namespace, names, 4, "the gang placed whole over mutual TLS")


@pytest.mark.parametrize("verb", ["/bind", "/preempt", "/filter", "/prioritize"])
def test_a_caller_without_a_client_certificate_is_refused_on_every_verb(
    service_form: ServiceForm, verb: str
) -> None:
    before = service_form.forbidden(verb[1:])
    status, text = _post(service_form.url(verb), service_form.context(client=False))
    assert status == 403 and "client certificate" in text
    assert service_form.forbidden(verb[1:]) == before + 1


def test_a_client_certificate_from_another_ca_fails_the_handshake(
    service_form: ServiceForm, tmp_path: Path
) -> None:
    context = service_form.context(client=False)
    context.load_cert_chain(*_self_signed_client(tmp_path))
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _post(service_form.url("/bind"), context)


def test_the_schedulers_certificate_is_served_and_probes_need_none(
    service_form: ServiceForm,
) -> None:
    status, text = _post(service_form.url("/bind"), service_form.context())
    assert status == 200 and "Error" in json.loads(text)  # an unknown pod: refused by Lahar
    url = service_form.url("/readyz")
    with urllib.request.urlopen(url, context=service_form.context(client=False)) as answer:
        assert answer.status == 200


def _ready(form: ServiceForm, port: int) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(
            form.url("/readyz", port), timeout=2, context=form.context(client=False)
        ) as answer:
            return answer.status == 200, answer.read().decode()
    except urllib.error.HTTPError as error:
        return False, error.read().decode()
    except (urllib.error.URLError, OSError) as error:
        return False, str(error)


def _standby_refusal(form: ServiceForm, port: int) -> str:
    pod = {"metadata": {"name": "probe", "namespace": "default", "uid": "probe"}, "spec": {}}
    status, text = _post(
        form.url("/filter", port), form.context(), {"Pod": pod, "NodeNames": ["n"]}
    )
    assert status == 200, text
    reply = json.loads(text)
    reasons = [reply.get("Error") or "", *(reply.get("FailedNodes") or {}).values()]
    return " ".join(r for r in reasons if "standby" in r)


def test_a_standby_takes_over_when_the_leader_dies(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    service_form: ServiceForm,
) -> None:
    own_nodes(1, cpu="4")
    state = service_form.state
    port, probes = free_ports(2)
    _, standby = _extender(state, service_form.keys, port, probes)
    try:
        wait_until(
            lambda: "standby" in _ready(service_form, port)[1],
            timeout=30,
            what="the second extender to answer /readyz as a standby",
        )
        assert "another replica holds the Lease" in _standby_refusal(service_form, port)
        child_processes.stop(
            service_form.extender, timeout=0.0
        )  # killed: the Lease is not released
        killed = time.monotonic()
        # Submitted while no extender serves: the scheduler calls the dead port, nothing binds.
        names = submit_gang(api, namespace, pod, "during", 2, cpu="1", scheduler=SCHEDULER)
        wait_until(
            lambda: _ready(service_form, port)[0],
            timeout=LEASE_SECONDS + 30,
            what="the standby to take over",
        )
        took = time.monotonic() - killed
        assert took <= LEASE_SECONDS + 10, f"took over after {took:.1f}s"
        assert _standby_refusal(service_form, port) == ""
        assert bound(api, namespace, names) == []
    finally:
        child_processes.stop(standby, timeout=10.0)
    # The killed leader starts again on its port (where the scheduler calls) and leads once
    # the standby's Lease runs out.
    service_form.extender, _ = child_processes.start(
        service_form.extender.name,
        service_form.argv,
        Path(service_form.extender.log),
        die_with_parent=True,
    )
    wait_until(
        lambda: len(bound(api, namespace, names)) == 2,
        timeout=90,
        what="the gang placed whole by the restarted leader",
        describe=lambda: child_processes.last_log_line(Path(service_form.extender.log)),
    )


def _self_signed_client(folder: Path) -> tuple[Path, Path]:
    """A client certificate from a CA the extender does not trust."""
    ca, ca_key = make_ca("intruder-ca")
    cert, key = make_leaf_cert(ca, ca_key, "intruder", (), (), client=True)
    cert_path, key_path = folder / "intruder.crt", folder / "intruder.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
