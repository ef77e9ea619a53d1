"""Every manifest in manifests/ is accepted by the real kube-apiserver: CRDs are created for real
and must become Established (a broken structural schema fails here), Namespaces are created for
real (the objects inside them need them), and every other object is validated with a server-side
dry run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.kube import KubeError, apply_object, load_manifests, wait_established

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
CRD = "CustomResourceDefinition"
CREATED_FOR_REAL = (CRD, "Namespace")


def test_manifests_folder_holds_objects() -> None:
    assert load_manifests(MANIFESTS), f"no manifests found under {MANIFESTS}"


def test_every_manifest_is_accepted_by_the_api_server(api: k8s.ApiClient) -> None:
    manifests = load_manifests(MANIFESTS)
    for manifest in manifests:
        if manifest.kind in CREATED_FOR_REAL:
            apply_object(api, manifest.body, source=manifest.source)
    wait_established(api, [m.name for m in manifests if m.kind == CRD], timeout=30)
    for manifest in manifests:
        if manifest.kind not in CREATED_FOR_REAL:
            apply_object(api, manifest.body, dry_run=True, source=manifest.source)


def _crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": CRD,
        "metadata": {"name": "widgets.test.lahar.io"},
        "spec": {
            "group": "test.lahar.io",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def test_a_crd_with_a_non_structural_schema_is_rejected(api: k8s.ApiClient) -> None:
    """The check above can fail: the server refuses a schema that is not structural."""
    broken = _crd({"type": "object", "properties": {"spec": {"description": "no type"}}})

    with pytest.raises(KubeError, match=r"properties\[spec\]\.type: Required value"):
        apply_object(api, broken, dry_run=True)
