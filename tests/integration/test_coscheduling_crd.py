"""Coscheduling's PodGroup CRD (manifests/crds/crd-coscheduling.yaml) on a real kube-apiserver: a
PodGroup as scheduler-plugins' users write it is stored as written, its status (the fields
Coscheduling's controller writes) goes through the status subresource only, the short name is
pgs alone (Volcano's PodGroup has pg), and a minMember below 1 is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.kube import KubeError, apply_object, load_manifests, read, wait_established
from extender.kube.raw import send

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "crds" / "crd-coscheduling.yaml"
API_VERSION = "scheduling.x-k8s.io/v1alpha1"
CONTENT_TYPE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def coscheduling_crd(api: k8s.ApiClient) -> str:
    (crd,) = load_manifests(CRD_FILE)
    apply_object(api, crd.body, source=crd.source)
    wait_established(api, [crd.name], timeout=30)
    return crd.name


def _group(namespace: str, name: str = "gang", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": 3, **spec},
    }


def _path(namespace: str, name: str) -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/podgroups/{name}"


def _stored(api: k8s.ApiClient, namespace: str, name: str = "gang") -> dict[str, Any]:
    stored = read(api, API_VERSION, "PodGroup", name, namespace)
    assert stored is not None, f"PodGroup {namespace}/{name} was not stored"
    return stored


@pytest.mark.usefixtures("coscheduling_crd")
def test_a_podgroup_is_stored_as_written(api: k8s.ApiClient, namespace: str) -> None:
    body = _group(
        namespace,
        minResources={"cpu": "3", "memory": "6Gi", "nvidia.com/gpu": 2},
        scheduleTimeoutSeconds=10,
    )
    apply_object(api, body)

    assert _stored(api, namespace)["spec"] == body["spec"]


@pytest.mark.usefixtures("coscheduling_crd")
def test_the_status_is_written_through_its_subresource_only(
    api: k8s.ApiClient, namespace: str
) -> None:
    apply_object(api, _group(namespace))
    status = {
        "phase": "Running",
        "occupiedBy": f"{namespace}/trainer",
        "running": 2,
        "succeeded": 1,
        "failed": 0,
        "scheduleStartTime": "2026-11-23T10:00:00Z",
    }
    ignored = {"status": {"phase": "Failed"}}
    send(api, "PATCH", _path(namespace, "gang"), body=ignored, content_type=CONTENT_TYPE).read()
    send(
        api,
        "PATCH",
        _path(namespace, "gang") + "/status",
        body={"status": status},
        content_type=CONTENT_TYPE,
    ).read()

    assert _stored(api, namespace)["status"] == status


@pytest.mark.usefixtures("coscheduling_crd")
def test_phases_of_earlier_releases_and_unknown_fields(api: k8s.ApiClient, namespace: str) -> None:
    """No enum on the phase (releases before v0.26 wrote PreScheduling and Scheduled); their
    `scheduled` count is no field any more, and is pruned."""
    apply_object(api, _group(namespace))
    status = {"phase": "PreScheduling", "scheduled": 3}
    send(
        api,
        "PATCH",
        _path(namespace, "gang") + "/status",
        body={"status": status},
        content_type=CONTENT_TYPE,
    ).read()

    assert _stored(api, namespace)["status"] == {"phase": "PreScheduling"}


@pytest.mark.usefixtures("coscheduling_crd")
def test_a_min_member_below_one_is_refused(api: k8s.ApiClient, namespace: str) -> None:
    with pytest.raises(KubeError, match=r"spec\.minMember: Invalid value: 0"):
        apply_object(api, _group(namespace, name="empty", minMember=0))
    assert read(api, API_VERSION, "PodGroup", "empty", namespace) is None


@pytest.mark.usefixtures("coscheduling_crd")
def test_the_short_name_is_pgs_alone(api: k8s.ApiClient) -> None:
    discovery = json.loads(send(api, "GET", f"/apis/{API_VERSION}").read())

    groups = next(r for r in discovery["resources"] if r["name"] == "podgroups")
    assert groups["kind"] == "PodGroup"
    assert groups["namespaced"] is True
    assert groups["singularName"] == "podgroup"
    assert groups["shortNames"] == ["pgs"]
    assert any(r["name"] == "podgroups/status" for r in discovery["resources"])
