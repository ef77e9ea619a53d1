"""The rights of `lahar simulate --from-cluster` and `lahar whatif` (manifests/whatif/): the
ClusterRole lahar-whatif grants get and list on exactly what a snapshot lists
(`snapshot_lists.SNAPSHOT_KINDS`), the Role lahar-whatif get on what the policy in force is read
from, nothing else (no watch, no write, no other resource); the default install leaves them out;
the chart renders the same objects with whatif.rbac.enabled, and none without."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.kube.snapshot_lists import READ_VERBS, ROLE, ROLE_NAMESPACE, SNAPSHOT_KINDS
from tests.helm import template

REPO = Path(__file__).resolve().parents[2]
WHATIF = REPO / "manifests" / "whatif"
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "watch", "*"}

Grant = tuple[str, str, str]  # (API group, resource, verb)


def _objects() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((WHATIF / "rbac.yaml").read_text()) if d]
    return {d["kind"]: d for d in docs}


def _grants(role: dict[str, Any]) -> set[Grant]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_file_holds_one_cluster_role_and_one_role_named_lahar_whatif() -> None:
    objects = _objects()
    assert sorted(objects) == ["ClusterRole", "Role"]
    assert {o["metadata"]["name"] for o in objects.values()} == {ROLE}
    assert objects["Role"]["metadata"]["namespace"] == ROLE_NAMESPACE


def test_the_cluster_role_grants_get_and_list_on_every_listed_kind_and_nothing_else() -> None:
    listed = {(kind.group, kind.name, verb) for kind in SNAPSHOT_KINDS for verb in READ_VERBS}
    assert _grants(_objects()["ClusterRole"]) == listed


def test_the_role_grants_get_on_deployments_and_config_maps_alone() -> None:
    assert _grants(_objects()["Role"]) == {
        ("apps", "deployments", "get"),
        ("", "configmaps", "get"),
    }


@pytest.mark.parametrize("kind", ["ClusterRole", "Role"])
def test_no_rule_writes_watches_or_reaches_beyond_resources(kind: str) -> None:
    rules = _objects()[kind]["rules"]
    assert not {verb for rule in rules for verb in rule["verbs"]} & WRITE_VERBS
    # No resourceNames (the policy ConfigMap's name is hashed), no nonResourceURLs.
    assert all(set(rule) == {"apiGroups", "resources", "verbs"} for rule in rules)


def test_the_kustomization_applies_the_file_and_the_default_install_leaves_it_out() -> None:
    assert yaml.safe_load((WHATIF / "kustomization.yaml").read_text())["resources"] == ["rbac.yaml"]
    install = yaml.safe_load((REPO / "manifests" / "kustomization.yaml").read_text())
    assert not any("whatif" in resource for resource in install["resources"])


def _rbac(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        d["kind"]: d
        for d in objects
        if d["kind"] in {"ClusterRole", "Role"} and d["metadata"]["name"] == ROLE
    }


@pytest.mark.parametrize(
    ("flags", "expected"),
    [([], {}), (["--set", "whatif.rbac.enabled=true"], _objects())],
    ids=["default", "whatif.rbac.enabled"],
)
def test_the_chart_renders_the_same_roles_only_when_asked(
    flags: list[str], expected: dict[str, dict[str, Any]]
) -> None:
    assert _rbac(template(*flags)) == expected


def test_the_chart_puts_the_role_in_the_release_namespace() -> None:
    rendered = _rbac(template("--set", "whatif.rbac.enabled=true", namespace="batch-system"))
    assert rendered["Role"]["metadata"]["namespace"] == "batch-system"
