"""Lahar's components run on the dev cluster with tokens of their own ServiceAccounts, bound to
their roles only by manifests/*-rbac.yaml (never admin): each is who it says, and may do what
its manifest grants and nothing next to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender import devcluster
from extender.devcluster.lahar import KUBECONFIGS, NAMESPACE
from extender.kube import connect
from extender.kube.raw import send


def _kubeconfig(cluster: devcluster.DevCluster, account: str) -> Path:
    return cluster.state.state_dir / f"{KUBECONFIGS[account]}.kubeconfig"


@pytest.mark.parametrize("account", sorted(KUBECONFIGS))
def test_each_component_is_its_service_account(
    dev_cluster: devcluster.DevCluster, account: str
) -> None:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    with connect(_kubeconfig(dev_cluster, account)) as api:
        path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
        answer = json.loads(send(api, "POST", path, body=review).read())
    user = answer["status"]["userInfo"]
    assert user["username"] == f"system:serviceaccount:{NAMESPACE}:{account}"
    assert "system:masters" not in user.get("groups", [])


@pytest.mark.parametrize(
    ("account", "asked", "allowed"),
    [
        ("lahar-extender", ("create", "pods/binding", "default", ""), True),
        ("lahar-extender", ("delete", "pods", "default", ""), False),
        ("lahar-extender", ("watch", "podgroups.scheduling.x-k8s.io", "default", ""), True),
        ("lahar-extender", ("patch", "podgroups.scheduling.x-k8s.io/status", "default", ""), True),
        ("lahar-extender", ("patch", "podgroups.scheduling.x-k8s.io", "default", ""), False),
        ("lahar-extender", ("watch", "podgroups.scheduling.k8s.io", "default", ""), True),
        ("lahar-extender", ("patch", "podgroups.scheduling.k8s.io/status", "default", ""), True),
        ("lahar-extender", ("delete", "podgroups.scheduling.k8s.io", "default", ""), False),
        ("lahar-controller", ("create", "pods", "default", ""), True),
        ("lahar-controller", ("create", "pods/binding", "default", ""), False),
        ("lahar-webhook", ("update", "secrets", NAMESPACE, "lahar-webhook-tls"), True),
        ("lahar-webhook", ("get", "secrets", NAMESPACE, "another-secret"), False),
        ("lahar-webhook", ("create", "secrets", NAMESPACE, ""), False),
        ("lahar-webhook", ("create", "pods", "default", ""), False),
        ("lahar-extender", ("update", "secrets", NAMESPACE, "lahar-scheduler-tls"), True),
        ("lahar-extender", ("get", "secrets", NAMESPACE, "lahar-webhook-tls"), False),
        ("lahar-extender", ("create", "secrets", NAMESPACE, ""), False),
        ("lahar-scheduler", ("get", "secrets", NAMESPACE, "lahar-scheduler-tls"), True),
        ("lahar-scheduler", ("update", "secrets", NAMESPACE, "lahar-scheduler-tls"), False),
        ("lahar-scheduler", ("create", "pods/binding", "default", ""), True),
        # (the run times of finished gangs: the extender's Role, bound to both accounts)
        ("lahar-scheduler", ("update", "configmaps", NAMESPACE, "lahar-run-times"), True),
        ("lahar-scheduler", ("update", "configmaps", NAMESPACE, "lahar-scheduler-config"), False),
        ("lahar-extender", ("create", "configmaps", NAMESPACE, ""), True),
        ("lahar-extender", ("get", "configmaps", "default", "lahar-run-times"), False),
    ],
)
def test_each_component_may_do_what_its_manifest_grants_and_no_more(
    dev_cluster: devcluster.DevCluster,
    account: str,
    asked: tuple[str, str, str, str],
    allowed: bool,
) -> None:
    verb, resource, namespace, name = asked  # name "": any object of that resource
    resource, _, sub = resource.partition("/")
    plural, _, group = resource.partition(".")  # e.g. "podgroups.scheduling.x-k8s.io"
    attributes = {"verb": verb, "resource": plural, "namespace": namespace}
    if group:
        attributes["group"] = group
    if sub:
        attributes["subresource"] = sub
    if name:
        attributes["name"] = name
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    with connect(_kubeconfig(dev_cluster, account)) as api:
        path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        answer = json.loads(send(api, "POST", path, body=review).read())
    assert answer["status"]["allowed"] is allowed
