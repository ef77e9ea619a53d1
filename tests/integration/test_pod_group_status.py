"""Writing a PodGroup's status on a real kube-apiserver, where its CRD serves a status subresource
(Lahar's) and where it serves none (Volcano's own CRD, whose scheduler updates the whole object).

Volcano's CRD is stood for by Lahar's PodGroup CRD without its `subresources`, served under a
group of its own (the session's cluster serves Lahar's `scheduling.volcano.sh`): without
`on_object` the write says the CRD serves no status subresource (`NoStatusSubresource`), with it
the status goes onto the object itself; a PodGroup that does not exist is neither.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from kubernetes import client as k8s

from extender.kube import KubeError, apply_object, load_manifests, read, wait_established
from extender.kube.reports import NoStatusSubresource, patch_pod_group_status

ROOT = Path(__file__).resolve().parents[2]
GROUP = "scheduling.volcano-crd.example"
API_VERSION = f"{GROUP}/v1beta1"


@pytest.fixture(scope="module")
def volcano_like_crd(api: k8s.ApiClient) -> str:
    """Lahar's PodGroup CRD as Volcano ships its own: no status subresource."""
    (crd,) = [
        item
        for item in load_manifests(ROOT / "manifests" / "crds" / "crd-scheduling.yaml")
        if item.body["spec"]["names"]["kind"] == "PodGroup"
    ]
    body = copy.deepcopy(crd.body)
    body["metadata"] = {"name": f"podgroups.{GROUP}"}
    body["spec"]["group"] = GROUP
    body["spec"]["names"].pop("shortNames", None)
    for version in body["spec"]["versions"]:
        version.pop("subresources", None)
    apply_object(api, body)
    wait_established(api, [body["metadata"]["name"]], timeout=30)
    return API_VERSION


def _group(api: k8s.ApiClient, namespace: str) -> str:
    made = apply_object(
        api,
        {
            "apiVersion": API_VERSION,
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": namespace},
            "spec": {"minMember": 2},
        },
    )
    return str(made["metadata"]["uid"])


def test_without_a_status_subresource_the_write_says_so_or_goes_onto_the_object(
    api: k8s.ApiClient, namespace: str, volcano_like_crd: str
) -> None:
    uid = _group(api, namespace)
    status = {"phase": "Inqueue", "running": 0}
    with pytest.raises(NoStatusSubresource, match="serves no status subresource"):
        patch_pod_group_status(api, namespace, "g", status, uid, api_version=volcano_like_crd)
    assert "status" not in (read(api, volcano_like_crd, "PodGroup", "g", namespace) or {})

    patch_pod_group_status(
        api, namespace, "g", status, uid, api_version=volcano_like_crd, on_object=True
    )
    stored = read(api, volcano_like_crd, "PodGroup", "g", namespace) or {}
    assert stored["status"]["phase"] == "Inqueue"
    assert stored["spec"]["minMember"] == 2  # (the rest as it was)


def test_a_pod_group_that_is_not_there_is_neither(
    api: k8s.ApiClient, namespace: str, volcano_like_crd: str
) -> None:
    with pytest.raises(KubeError) as missing:
        patch_pod_group_status(
            api, namespace, "nope", {"phase": "Running"}, api_version=volcano_like_crd
        )
    assert not isinstance(missing.value, NoStatusSubresource)
