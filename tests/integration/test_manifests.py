"""The API server's check that tests/e2e/test_manifests.py relies on (every object of the
rendered kustomization accepted by a server-side dry run, the CRDs Established) can fail: a CRD
whose schema is not structural is refused."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from extender.kube import KubeError, apply_object

CRD = "CustomResourceDefinition"


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
    """The server refuses a schema that is not structural."""
    broken = _crd({"type": "object", "properties": {"spec": {"description": "no type"}}})

    with pytest.raises(KubeError, match=r"properties\[spec\]\.type: Required value"):
        apply_object(api, broken, dry_run=True)
