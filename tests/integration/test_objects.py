"""Listing objects (`extender.kube.list_objects`) on a real kube-apiserver: one namespace's or
every namespace's, narrowed by a label or a field selector, a cluster-scoped kind, each item as the
server sent it; a selector the server refuses is a `KubeError` naming the kind and the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.kube import KubeError, apply_object, list_objects


def _config_map(name: str, namespace: str, tier: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"tier": tier}},
        "data": {"name": name},
    }


@pytest.fixture
def three(api: k8s.ApiClient, namespace: str) -> str:
    for name, tier in (("a", "gold"), ("b", "gold"), ("c", "bronze")):
        apply_object(api, _config_map(name, namespace, tier))
    return namespace


def _names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(item["metadata"]["name"] for item in items)


LISTS: list[tuple[str, Callable[[k8s.ApiClient, str], list[dict[str, Any]]], list[str]]] = [
    (
        "the namespace",
        lambda api, ns: list_objects(api, "v1", "ConfigMap", namespace=ns),
        ["a", "b", "c", "kube-root-ca.crt"],
    ),
    (
        "by label",
        lambda api, ns: list_objects(
            api, "v1", "ConfigMap", namespace=ns, label_selector="tier=gold"
        ),
        ["a", "b"],
    ),
    (
        "by field",
        lambda api, ns: list_objects(
            api, "v1", "ConfigMap", namespace=ns, field_selector="metadata.name=c"
        ),
        ["c"],
    ),
    (
        "every namespace",
        lambda api, ns: [
            item
            for item in list_objects(api, "v1", "ConfigMap", label_selector="tier")
            if item["metadata"]["namespace"] == ns
        ],
        ["a", "b", "c"],
    ),
    (
        "a cluster-scoped kind",
        lambda api, ns: list_objects(api, "v1", "Namespace", field_selector=f"metadata.name={ns}"),
        ["NAMESPACE"],
    ),
]


@pytest.mark.parametrize(("case", "listed", "expected"), LISTS, ids=[c[0] for c in LISTS])
def test_a_list_holds_what_the_server_selects(
    api: k8s.ApiClient,
    three: str,
    case: str,
    listed: Callable[[k8s.ApiClient, str], list[dict[str, Any]]],
    expected: list[str],
) -> None:
    items = listed(api, three)
    assert _names(items) == [three if name == "NAMESPACE" else name for name in expected], case
    for item in items:
        assert item["metadata"]["uid"] and item["metadata"]["resourceVersion"]
    if case == "by field":
        assert items[0]["data"] == {"name": "c"}


def test_a_selector_the_server_refuses_names_the_kind_and_why(
    api: k8s.ApiClient, namespace: str
) -> None:
    with pytest.raises(KubeError, match=r"listing ConfigMap: .*HTTP 400"):
        list_objects(api, "v1", "ConfigMap", namespace=namespace, label_selector="tier in (")
