"""A real Prometheus (built from the Go module pinned in tests/controlplane/prometheus) scraping
the dev cluster's extender, controller and webhook every second with Lahar's alert rules
(charts/lahar/files/alerts/rules.yaml): every Lahar target is up, every rule loads and evaluates
without error, and LaharControllerNoLeader fires while the controller is stopped and resolves once
it leads again. Prometheus built from Go modules serves no web UI; its HTTP API is all that is
read. The controller is running again when the test ends, whatever happened in it."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import child_processes, ensure_tool
from extender.devcluster.health import wait_healthy
from extender.devcluster.ports import free_ports
from extender.kube import read, wait_until
from tests.e2e.conftest import start_as

RULES = Path(__file__).resolve().parents[2] / "charts" / "lahar" / "files" / "alerts" / "rules.yaml"
JOBS = ("lahar-extender", "lahar-controller", "lahar-webhook")
ALERT = "LaharControllerNoLeader"


def _rules_with_a_short_wait(folder: Path) -> Path:
    """The shipped rules, but for one change: LaharControllerNoLeader fires after 2 s without a
    leading controller instead of the shipped 5 minutes, so that the test sees it fire."""
    rules = yaml.safe_load(RULES.read_text())
    (alert,) = (r for g in rules["groups"] for r in g["rules"] if r.get("alert") == ALERT)
    alert["for"] = "2s"
    path = folder / "rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    return path


def _webhook_ca(api: k8s.ApiClient, folder: Path) -> Path:
    """The CAs the webhook published for the API server (its configuration's caBundle), which
    sign the certificate it serves /metrics with too."""
    config = read(
        api, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "lahar-webhook"
    )
    assert config is not None
    bundle = config["webhooks"][0]["clientConfig"]["caBundle"]
    path = folder / "webhook-ca.crt"
    path.write_bytes(base64.b64decode(bundle))
    return path


@pytest.fixture(scope="module")
def prometheus(
    dev_cluster: devcluster.DevCluster, api: k8s.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The URL of a Prometheus scraping the dev cluster's Lahar, stopped after the module."""
    folder = tmp_path_factory.mktemp("prometheus")
    ports = dev_cluster.state.ports

    def job(name: str, port: int, **tls: Any) -> dict[str, Any]:
        return {"job_name": name, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}], **tls}

    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(_rules_with_a_short_wait(folder))],
        "scrape_configs": [
            job("lahar-extender", ports["lahar"]),
            job("lahar-controller", ports["lahar-controller"]),
            job(
                "lahar-webhook",
                ports["lahar-webhook"],
                scheme="https",
                tls_config={"ca_file": str(_webhook_ca(api, folder))},
            ),
        ],
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    (port,) = free_ports(1)
    argv = [
        str(ensure_tool("prometheus") / "prometheus"),
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    record, child = child_processes.start(
        "prometheus", argv, folder / "prometheus.log", die_with_parent=True
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(record, f"{url}/-/ready", timeout=60)
        yield url
    finally:
        child_processes.stop(record)
        child.wait(timeout=10)


def _get(url: str, path: str) -> Any:
    with urllib.request.urlopen(url + path, timeout=5) as answer:
        body = json.loads(answer.read())
    assert body["status"] == "success", body
    return body["data"]


def _targets(url: str) -> dict[str, dict[str, Any]]:
    return {
        t["labels"]["job"]: t for t in _get(url, "/api/v1/targets?state=active")["activeTargets"]
    }


def _rules(url: str) -> list[dict[str, Any]]:
    return [rule for group in _get(url, "/api/v1/rules")["groups"] for rule in group["rules"]]


def _alert_states(url: str, name: str) -> set[str]:
    """The states (pending, firing) of the active alerts named `name`; empty once resolved."""
    return {
        a["state"]
        for a in _get(url, "/api/v1/alerts")["alerts"]
        if a["labels"]["alertname"] == name
    }


def test_every_lahar_target_is_up_and_every_rule_evaluates(prometheus: str) -> None:
    wait_until(
        lambda: all(_targets(prometheus).get(job, {}).get("health") == "up" for job in JOBS),
        timeout=30,
        what="every Lahar target up",
        describe=lambda: json.dumps(
            {job: (t["health"], t["lastError"]) for job, t in _targets(prometheus).items()}
        ),
    )
    shipped = [g["rules"] for g in yaml.safe_load(RULES.read_text())["groups"]]

    def evaluated() -> list[dict[str, Any]] | None:
        found = _rules(prometheus)
        return found if found and all(r["health"] != "unknown" for r in found) else None

    rules = wait_until(evaluated, timeout=30, what="every rule evaluated once")
    assert len(rules) == sum(map(len, shipped))
    assert {(r["name"], r["health"], r.get("lastError", "")) for r in rules} == {
        (r["name"], "ok", "") for r in rules
    }


def test_no_leading_controller_fires_while_it_is_stopped_and_resolves_once_it_leads(
    dev_cluster: devcluster.DevCluster, prometheus: str
) -> None:
    controller = "lahar-controller"
    argv = dev_cluster.argv_of(controller)
    # Until the first scrape the series is absent, so the alert may be pending for a moment.
    wait_until(
        lambda: not _alert_states(prometheus, ALERT),
        timeout=30,
        what=f"{ALERT} quiet while the controller leads",
    )
    try:
        dev_cluster.stop_component(controller)
        wait_until(
            lambda: _alert_states(prometheus, ALERT) == {"firing"},
            timeout=60,
            what=f"{ALERT} firing with the controller stopped",
            describe=lambda: str(_alert_states(prometheus, ALERT)),
        )
        start_as(dev_cluster, controller, argv)  # (waits until it leads)
        wait_until(
            lambda: not _alert_states(prometheus, ALERT),
            timeout=30,
            what=f"{ALERT} resolved with the controller leading",
            describe=lambda: str(_alert_states(prometheus, ALERT)),
        )
    finally:
        if not dev_cluster.is_running(controller):
            start_as(dev_cluster, controller, argv)
