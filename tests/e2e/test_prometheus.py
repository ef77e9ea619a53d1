"""The Prometheus scrape examples: `manifests/prometheus/` (a ServiceMonitor) is accepted by the
API server with the Prometheus Operator's own CRD (from its Go module, pinned below), and selects
every metrics Service of the install by a port each of them has; every pod carries the scrape
annotations for its port and scheme."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster.paths import manifests_dir
from extender.kube import apply_object, wait_established

OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
CRD = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"


def _render(folder: Path) -> list[dict[str, Any]]:
    kubectl = devcluster.ensure_binaries(quiet=True).kubectl
    out = subprocess.run(
        [str(kubectl), "kustomize", str(folder)], capture_output=True, text=True, check=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module")
def service_monitor_crd(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    download = subprocess.run(
        ["go", "mod", "download", "-json", OPERATOR],
        cwd=tmp_path_factory.mktemp("go"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert download.returncode == 0, download.stdout + download.stderr
    folder = Path(json.loads(download.stdout)["Dir"])
    crd: dict[str, Any] = yaml.safe_load((folder / CRD).read_text())
    return crd


def test_the_service_monitor_is_accepted_and_selects_every_metrics_service(
    api: k8s.ApiClient, service_monitor_crd: dict[str, Any]
) -> None:
    apply_object(api, service_monitor_crd)
    wait_established(api, [service_monitor_crd["metadata"]["name"]], 60)
    (monitor,) = _render(manifests_dir() / "prometheus")
    apply_object(api, monitor, dry_run=True)  # raises with the API server's reason

    selector = monitor["spec"]["selector"]["matchLabels"]
    ports = {endpoint["port"]: endpoint["scheme"] for endpoint in monitor["spec"]["endpoints"]}
    install = _render(manifests_dir())
    selected = [
        doc
        for doc in install
        if doc["kind"] == "Service"
        and selector.items() <= (doc["metadata"].get("labels") or {}).items()
    ]
    names = {doc["metadata"]["name"] for doc in selected}
    assert names == {"lahar-scheduler-metrics", "lahar-controller-metrics", "lahar-webhook"}
    for service in selected:
        assert {p["name"] for p in service["spec"]["ports"]} & set(ports), service["metadata"]


@pytest.mark.parametrize(
    ("deployment", "scheme"),
    [("lahar-scheduler", "http"), ("lahar-controller", "http"), ("lahar-webhook", "https")],
)
def test_every_pod_carries_the_scrape_annotations_for_its_port(
    deployment: str, scheme: str
) -> None:
    found = next(
        doc
        for doc in _render(manifests_dir())
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == deployment
    )
    template = found["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    ports = {p["containerPort"] for c in template["spec"]["containers"] for p in c.get("ports", [])}
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/scheme"] == scheme
    assert int(annotations["prometheus.io/port"]) in ports
    assert annotations["prometheus.io/path"] == "/metrics"
