"""A Lease the API server will not let a process take is an error, not a standby's wait.

Each case starts a second Lahar process against the dev cluster with a Lease it cannot take: in a
namespace that does not exist, or one its ServiceAccount may not write leases in; or, for the
extender beside kube-scheduler, a scheduler's Lease in a namespace that does not exist. Until that
is fixed, `/readyz` answers 503 naming the Lease's namespace and the fix, the log has one ERROR line
(not one per retry), and the extender's refusal to kube-scheduler says the same, not "another
replica holds the Lease". Once the namespace (or the role) is there, the process takes the Lease
(or, following, is ready as a standby beside a scheduler that has not led yet), with no restart.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.devcluster import child_processes
from extender.devcluster.lahar import controller_argv, lahar_argv
from extender.devcluster.ports import free_ports
from extender.kube import apply_object, delete, wait_until

RETRY_SECONDS = 2  # LeaseOptions.retry_seconds: how often the elector tries again


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (urllib.error.URLError, OSError) as error:
        return 0, str(error)


def _filter_refusal(port: int) -> str:
    """Every reason the extender gives kube-scheduler for refusing a pod's nodes."""
    pod = {"metadata": {"name": "probe", "namespace": "default", "uid": "probe"}, "spec": {}}
    body = json.dumps({"Pod": pod, "NodeNames": ["n1"]}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/filter", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        reply = json.loads(answer.read())
    return " ".join([reply.get("Error") or "", *(reply.get("FailedNodes") or {}).values()])


def _extender_argv(kubeconfig: Path, port: int, lease_namespace: str) -> list[str]:
    """`lahar serve` with a Lease of its own (the Service form, here on plain HTTP)."""
    return lahar_argv(
        "serve",
        kubeconfig,
        port,
        "--leader-elect",
        f"--lease-namespace={lease_namespace}",
        "--served-scheduler=lahar-lease-test",  # (once it leads, it wakes no one's pods)
    )


def _follower_argv(kubeconfig: Path, port: int, lease_namespace: str) -> list[str]:
    """`lahar serve` beside a kube-scheduler whose Lease is in `lease_namespace`."""
    return lahar_argv(
        "serve", kubeconfig, port, f"--follow-scheduler-lease={lease_namespace}/lahar-scheduler"
    )


def _controller_argv(kubeconfig: Path, port: int, lease_namespace: str) -> list[str]:
    return [*controller_argv(kubeconfig, port), f"--lease-namespace={lease_namespace}"]


def _create_namespace(api: k8s.ApiClient, name: str) -> None:
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _grant_leases(api: k8s.ApiClient, namespace: str) -> None:
    """What manifests/base/controller-rbac.yaml grants in lahar-system, in `namespace` too."""
    meta = {"name": "lahar-controller-lease", "namespace": namespace}
    apply_object(
        api,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["get", "create", "update"],
                }
            ],
        },
    )
    apply_object(
        api,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": meta["name"],
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": "lahar-controller", "namespace": "lahar-system"}
            ],
        },
    )


@dataclass(frozen=True)
class Case:
    component: str  # "controller" or "extender"
    argv: Callable[[Path, int, str], list[str]]
    as_admin: bool  # the admin's kubeconfig; else the controller's own ServiceAccount's
    namespace_exists: bool  # the Lease's namespace exists from the start
    said: tuple[str, ...]  # what /readyz and the ERROR line say, with {ns} the Lease's namespace
    fix: Callable[[k8s.ApiClient, str], None]  # what the operator does about it
    leads: bool = True  # once fixed it takes the Lease (else: follows, ready as a standby)


CASES = [
    Case(
        "controller",
        _controller_argv,
        as_admin=True,
        namespace_exists=False,
        said=(
            "cannot take Lease {ns}/lahar-controller",
            "namespace {ns} does not exist",
            "kubectl create namespace {ns}",
            "--lease-namespace",
        ),
        fix=_create_namespace,
    ),
    Case(
        "extender",
        _extender_argv,
        as_admin=True,
        namespace_exists=False,
        said=(
            "cannot take Lease {ns}/lahar-extender",
            "namespace {ns} does not exist",
            "kubectl create namespace {ns}",
            "--lease-namespace",
        ),
        fix=_create_namespace,
    ),
    Case(
        "controller",
        _controller_argv,
        as_admin=False,
        namespace_exists=True,
        said=(
            "cannot take Lease {ns}/lahar-controller: forbidden",
            "get, create and update on leases in namespace {ns}",
        ),
        fix=_grant_leases,
    ),
    Case(
        "extender",
        _follower_argv,
        as_admin=True,
        namespace_exists=False,
        said=(
            "cannot read Lease {ns}/lahar-scheduler",
            "namespace {ns} does not exist",
            "kubectl create namespace {ns}",
            "--follow-scheduler-lease",
        ),
        fix=_create_namespace,
        leads=False,
    ),
]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[
        "controller-no-namespace",
        "extender-no-namespace",
        "controller-forbidden",
        "follower-no-namespace",
    ],
)
def test_a_lease_it_cannot_take_is_an_error_until_it_is_fixed(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    tmp_path: Path,
    case: Case,
) -> None:
    lease_namespace = namespace if case.namespace_exists else f"{namespace}-lease"
    said = [s.format(ns=lease_namespace) for s in case.said]
    state_dir = dev_cluster.state.state_dir
    credentials = (
        dev_cluster.kubeconfig if case.as_admin else state_dir / "lahar-controller.kubeconfig"
    )
    (port,) = free_ports(1)
    log = tmp_path / f"{case.component}.log"
    record, child = child_processes.start(
        f"lahar-{case.component}-lease",
        case.argv(credentials, port, lease_namespace),
        log,
        die_with_parent=True,
    )
    try:
        # (Before its first attempt at the Lease, /readyz says it has not read it yet.)
        wait_until(
            lambda: lease_namespace in (body := _readyz(port)[1]) and " yet" not in body,
            timeout=60,
            what=f"/readyz to say why namespace {lease_namespace} holds no Lease for it",
        )
        status, body = _readyz(port)
        assert status == 503
        for words in said:
            assert words in body, body
        if case.component == "extender":
            refusal = _filter_refusal(port)
            assert said[0] in refusal and "another replica" not in refusal, refusal

        time.sleep(2.5 * RETRY_SECONDS)  # more attempts, refused the same way: no more ERRORs
        errors = [line for line in log.read_text().splitlines() if " ERROR " in line]
        assert len(errors) == 1, errors
        for words in said:
            assert words in errors[0]

        case.fix(api, lease_namespace)
        wait_until(
            lambda: _readyz(port)[0] == 200,
            timeout=60,
            what=f"the {case.component} to take its Lease once {lease_namespace} allows it",
        )
        if case.leads:  # (ready is not leading: a controller that can take its Lease is ready)
            wait_until(
                lambda: f"leading: holding Lease {lease_namespace}/" in log.read_text(),
                timeout=10,
                what=f"the {case.component} to lead",
            )
        text = log.read_text()
        assert (f"leading: holding Lease {lease_namespace}/" in text) == case.leads
        assert f"Lease {lease_namespace}/" in text and " now: its namespace exists" in text
        assert len([line for line in text.splitlines() if " ERROR " in line]) == 1
    finally:
        child_processes.stop(record, timeout=10.0)
        child.poll()
        if not case.namespace_exists:
            delete(api, "v1", "Namespace", lease_namespace)
