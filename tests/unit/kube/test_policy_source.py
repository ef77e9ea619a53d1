"""The policy in force, found from Lahar's Deployment: the shipped Deployments (manifests/
scheduler.yaml, manifests/extender-service/, their policy ConfigMap named with kustomize's hash)
read their policy from the ConfigMap key their --policy names; a mount by subPath, a volume's
`items` and the nearest of nested mounts are followed; a Deployment that does not say (no
--policy, nothing mounted there, no ConfigMap, no key) is one line naming what is missing and the
flag to pass instead. `policy_in_force` reads the Deployment and the ConfigMap the same way, and a
missing or refused object is that same one line."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from extender.kube import snapshot_lists
from extender.kube.policy_source import PolicyMount, PolicyNotFound, policy_in_force, policy_mount
from extender.kube.raw import ApiStatusError

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests"
HASHED = "lahar-policy-5h2tkg8m9b"  # (kustomize's configMapGenerator appends the data's hash)
INSTEAD = "pass --current-policy FILE"
Deployment = dict[str, Any]


def shipped(file: str) -> Deployment:
    """The Deployment of a shipped manifest, its policy ConfigMap named as kustomize names it."""
    (deployment,) = (
        doc
        for doc in yaml.safe_load_all((MANIFESTS / file).read_text())
        if doc and doc["kind"] == "Deployment"
    )
    for volume in deployment["spec"]["template"]["spec"]["volumes"]:
        if (volume.get("configMap") or {}).get("name") == "lahar-policy":
            volume["configMap"]["name"] = HASHED
    return dict(deployment)


BESIDE = shipped("scheduler.yaml")
STANDALONE = shipped("extender-service/extender.yaml")


def edited(*edits: Callable[[dict[str, Any], dict[str, Any]], None]) -> Deployment:
    """The shipped Deployment (beside kube-scheduler) with `edits` made to its pod spec and its
    extender container."""
    deployment = copy.deepcopy(BESIDE)
    spec = deployment["spec"]["template"]["spec"]
    (extender,) = (c for c in spec["containers"] if c["name"] == "extender")
    for edit in edits:
        edit(spec, extender)
    return deployment


def args(*argv: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def edit(spec: dict[str, Any], container: dict[str, Any]) -> None:
        container["args"] = list(argv)

    return edit


def mount(**fields: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    """The extender's mount of volume `name` (added, or replaced when it had one)."""

    def edit(spec: dict[str, Any], container: dict[str, Any]) -> None:
        others = [m for m in container["volumeMounts"] if m["name"] != fields["name"]]
        container["volumeMounts"] = [*others, fields]

    return edit


def volume(**fields: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    """The pod's volume `name` (added, or replaced when it had one)."""

    def edit(spec: dict[str, Any], container: dict[str, Any]) -> None:
        spec["volumes"] = [*(v for v in spec["volumes"] if v["name"] != fields["name"]), fields]

    return edit


def found(
    deployment: str = "lahar-system/lahar-scheduler",
    path: str = "/etc/lahar/policy/lahar.yaml",
    mount_path: str = "/etc/lahar/policy",
    key: str = "lahar.yaml",
) -> PolicyMount:
    return PolicyMount(deployment, "extender", path, "policy", mount_path, HASHED, key)


RUNS = "Deployment lahar-system/lahar-scheduler runs"
FOUND = {
    "shipped, beside kube-scheduler": (BESIDE, found()),
    "shipped, standalone extender": (STANDALONE, found("lahar-system/lahar-extender")),
    "--policy PATH as two arguments": (
        edited(args("serve", "--policy", "/etc/lahar/policy/preemption.yaml")),
        found(path="/etc/lahar/policy/preemption.yaml", key="preemption.yaml"),
    ),
    "a file mounted by subPath": (
        edited(
            args("serve", "--policy=/etc/lahar/lahar.yaml"),
            mount(name="policy", mountPath="/etc/lahar/lahar.yaml", subPath="lahar.yaml"),
        ),
        found(path="/etc/lahar/lahar.yaml", mount_path="/etc/lahar/lahar.yaml"),
    ),
    "a key the volume's items project under another name": (
        edited(
            args("serve", "--policy=/etc/lahar/policy/policy.yaml"),
            volume(
                name="policy",
                configMap={
                    "name": HASHED,
                    "items": [{"key": "preemption.yaml", "path": "policy.yaml"}],
                },
            ),
        ),
        found(path="/etc/lahar/policy/policy.yaml", key="preemption.yaml"),
    ),
    "the nearest of nested mounts": (
        edited(volume(name="etc", emptyDir={}), mount(name="etc", mountPath="/etc")),
        found(),
    ),
}
NOT_FOUND = {
    "no --policy": (
        edited(args("serve", "--port=8888")),
        "no container of Deployment lahar-system/lahar-scheduler has a --policy argument",
    ),
    "a relative path": (
        edited(args("serve", "--policy=lahar.yaml")),
        f"{RUNS} --policy=lahar.yaml, not an absolute path",
    ),
    "nothing mounted there": (
        edited(args("serve", "--policy=/srv/lahar.yaml")),
        f"{RUNS} --policy=/srv/lahar.yaml but mounts no volume there",
    ),
    "a volume that is not a ConfigMap": (
        edited(volume(name="policy", emptyDir={})),
        f"{RUNS} --policy=/etc/lahar/policy/lahar.yaml from the volume policy, which is not a "
        "ConfigMap",
    ),
    "items without the file": (
        edited(
            volume(name="policy", configMap={"name": HASHED, "items": [{"key": "a", "path": "b"}]})
        ),
        f"{RUNS} --policy=/etc/lahar/policy/lahar.yaml, which names no key of ConfigMap {HASHED}",
    ),
    "a file below a key": (
        edited(args("serve", "--policy=/etc/lahar/policy/sub/lahar.yaml")),
        f"{RUNS} --policy=/etc/lahar/policy/sub/lahar.yaml, which names no key of ConfigMap "
        f"{HASHED}",
    ),
}


@pytest.mark.parametrize("case", list(FOUND))
def test_the_policy_is_found_where_the_extender_reads_it(case: str) -> None:
    deployment, expected = FOUND[case]
    assert policy_mount(deployment) == expected
    assert expected.where == f"ConfigMap lahar-system/{HASHED} key {expected.key}"


@pytest.mark.parametrize("case", list(NOT_FOUND))
def test_a_deployment_that_does_not_say_is_one_line_naming_what_and_the_flag(case: str) -> None:
    deployment, said = NOT_FOUND[case]
    with pytest.raises(PolicyNotFound) as raised:
        policy_mount(deployment)
    assert str(raised.value) == f"{said}: {INSTEAD}"


class Response:
    def __init__(self, body: dict[str, Any]) -> None:
        self._body = io.BytesIO(json.dumps(body).encode())

    def read(self) -> bytes:
        return self._body.read()


DEPLOYMENT_PATH = "/apis/apps/v1/namespaces/lahar-system/deployments/lahar-scheduler"
CONFIG_MAP_PATH = f"/api/v1/namespaces/lahar-system/configmaps/{HASHED}"
POLICY = (MANIFESTS / "base" / "policy" / "lahar.yaml").read_text()
CONFIG_MAP = {"metadata": {"name": HASHED}, "data": {"lahar.yaml": POLICY, "preemption.yaml": ""}}
SERVED = {DEPLOYMENT_PATH: BESIDE, CONFIG_MAP_PATH: CONFIG_MAP}
SCHEDULER = "Deployment lahar-system/lahar-scheduler"

IN_FORCE: dict[str, tuple[dict[str, Any], str]] = {
    "no Deployment": (
        {DEPLOYMENT_PATH: 404},
        f"no {SCHEDULER} in the cluster: {INSTEAD}",
    ),
    "Deployment refused": (
        {DEPLOYMENT_PATH: 403},
        "cannot get deployments.apps in the namespace lahar-system: bind the Role lahar-whatif in "
        f"lahar-system (manifests/whatif/), or {INSTEAD}",
    ),
    "no ConfigMap": (
        {CONFIG_MAP_PATH: 404},
        f"ConfigMap lahar-system/{HASHED}, which {SCHEDULER} mounts at /etc/lahar/policy, does "
        f"not exist: {INSTEAD}",
    ),
    "ConfigMap refused": (
        {CONFIG_MAP_PATH: 403},
        "cannot get configmaps in the namespace lahar-system: bind the Role lahar-whatif in "
        f"lahar-system (manifests/whatif/), or {INSTEAD}",
    ),
    "no key": (
        {CONFIG_MAP_PATH: {"metadata": {"name": HASHED}, "data": {"preemption.yaml": ""}}},
        f"ConfigMap lahar-system/{HASHED} has no key lahar.yaml, which {SCHEDULER} runs as "
        f"--policy=/etc/lahar/policy/lahar.yaml: {INSTEAD}",
    ),
}


def _serve(monkeypatch: pytest.MonkeyPatch, changed: dict[str, Any]) -> None:
    """The API server holding the shipped Deployment and its ConfigMap, but for `changed`
    (a path answering an HTTP status, or another object)."""
    answers = {**SERVED, **changed}

    def send(api: k8s.ApiClient, method: str, path: str, **_: Any) -> Response:
        answer = answers.get(path, 404)
        if isinstance(answer, int):
            raise ApiStatusError(f"{method} {path}: HTTP {answer}", answer)
        return Response(answer)

    monkeypatch.setattr(snapshot_lists, "send", send)


def test_the_policy_in_force_is_the_text_of_the_key_and_says_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _serve(monkeypatch, {})
    assert policy_in_force(k8s.ApiClient()) == (
        POLICY,
        f"ConfigMap lahar-system/{HASHED} key lahar.yaml",
    )


@pytest.mark.parametrize("case", list(IN_FORCE))
def test_a_missing_or_refused_object_is_one_line_and_the_flag(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    changed, message = IN_FORCE[case]
    _serve(monkeypatch, changed)
    with pytest.raises(PolicyNotFound) as raised:
        policy_in_force(k8s.ApiClient())
    assert str(raised.value) == message


def test_another_deployment_is_read_where_it_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    path = "/apis/apps/v1/namespaces/lahar-system/deployments/lahar-extender"
    _serve(monkeypatch, {path: STANDALONE})
    text, where = policy_in_force(k8s.ApiClient(), "lahar-system/lahar-extender")
    assert (text, where) == (POLICY, f"ConfigMap lahar-system/{HASHED} key lahar.yaml")
