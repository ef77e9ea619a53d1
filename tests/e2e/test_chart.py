"""The Helm chart `charts/lahar/` against the kustomize install it packages: `helm lint` passes
(strict too); with no value set, `helm template` renders the objects `kubectl kustomize
manifests/` does, object by object (the ConfigMaps' hash suffixes included), and so do the
standalone-extender form, the beside-Volcano component, the ServiceMonitor and manifests/whatif/
with their values; `--include-crds` adds exactly manifests/crds/; the chart's copies of the policy
files and CRDs are the canonical files; each value changes what it says and nothing else; the
policies and the kube-scheduler configuration the chart writes are what `lahar serve` accepts; a bad
value is refused naming its key; and the API server accepts every object rendered (server-side dry
run, the pods admitted under Pod Security's restricted standard). Kustomize renders with kubectl
built from the control plane's module, Helm is built from tests/controlplane/helm."""

from __future__ import annotations

import difflib
import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

import extender
from extender import devcluster
from extender.devcluster.paths import manifests_dir
from extender.framework.policy import load_policy
from extender.framework.scheduler_config import config_problems, profile_names
from extender.plugins import REGISTRY
from extender.webhook.conditions import expression
from tests.e2e.test_manifests import (
    BESIDE_VOLCANO,
    CRITICAL,
    deployments,
    namespace_like,
    pod_answers,
    render,
    server_dry_run,
)
from tests.helm import CHART, NAMESPACE, Objects, helm, template


def with_values(values: dict[str, Any], folder: Path, *flags: str) -> Objects:
    """The chart rendered with `values` as a values file (after any `--values` in `flags`, which
    Helm merges key by key)."""
    path = folder / f"values-{secrets.token_hex(3)}.yaml"
    path.write_text(yaml.safe_dump(values))
    return template(*flags, "--values", str(path))


def _key(doc: dict[str, Any]) -> str:
    metadata = doc["metadata"]
    return f"{doc['kind']}/{metadata.get('namespace', '')}/{metadata['name']}"


def differences(kustomize: Objects, chart: Objects) -> str:
    """What differs between the two renders, object by object (keyed by kind, namespace and
    name, keys sorted), as a unified diff; "" when they are the same objects."""
    left, right = {_key(d): d for d in kustomize}, {_key(d): d for d in chart}
    said = [f"only kustomize renders {key}" for key in sorted(set(left) - set(right))]
    said += [f"only the chart renders {key}" for key in sorted(set(right) - set(left))]
    for key in sorted(set(left) & set(right)):
        a = yaml.safe_dump(left[key], sort_keys=True).splitlines()
        b = yaml.safe_dump(right[key], sort_keys=True).splitlines()
        if a != b:
            said += difflib.unified_diff(a, b, f"kustomize {key}", f"chart {key}", lineterm="")
    return "\n".join(said)


def _overlay(folder: Path, kustomization: str) -> Objects:
    (folder / "manifests").symlink_to(manifests_dir())
    (folder / "lahar").mkdir()
    (folder / "lahar" / "kustomization.yaml").write_text(kustomization)
    return render(folder / "lahar")


def _default(folder: Path) -> Objects:
    return render(manifests_dir())


def _service_form(folder: Path) -> Objects:
    return render(manifests_dir() / "extender-service")


def _beside_volcano(folder: Path) -> Objects:
    """docs/migrating.md's overlay, without the image it sets (the chart's default image)."""
    kustomization = BESIDE_VOLCANO.split("images:")[0]
    return _overlay(folder, kustomization)


def _with_service_monitor(folder: Path) -> Objects:
    return render(manifests_dir()) + render(manifests_dir() / "prometheus")


def _with_whatif_rbac(folder: Path) -> Objects:
    return render(manifests_dir()) + render(manifests_dir() / "whatif")


SAME = {  # helm values -> the kustomize render the chart equals with them
    "default": ([], _default),
    "extenderForm=service": (["--set", "extenderForm=service"], _service_form),
    "besideVolcano=true": (["--set", "besideVolcano=true"], _beside_volcano),
    "serviceMonitor.enabled=true": (
        ["--set", "serviceMonitor.enabled=true"],
        _with_service_monitor,
    ),
    "whatif.rbac.enabled=true": (["--set", "whatif.rbac.enabled=true"], _with_whatif_rbac),
}


@pytest.mark.parametrize("case", sorted(SAME))
def test_the_chart_renders_what_kustomize_renders(case: str, tmp_path: Path) -> None:
    flags, kustomize = SAME[case]
    expected, found = kustomize(tmp_path), template(*flags)
    assert len(found) == len({_key(d) for d in found})  # (no object twice)
    assert differences(expected, found) == ""


def test_include_crds_adds_exactly_the_crds_of_manifests_crds() -> None:
    plain = {_key(d) for d in template()}
    with_crds = template("--include-crds")
    added = [d for d in with_crds if _key(d) not in plain]
    assert len(with_crds) == len(plain) + len(added)
    assert differences(render(manifests_dir() / "crds"), added) == ""


@pytest.mark.parametrize("strict", [False, True])
def test_helm_lint_passes(strict: bool) -> None:
    done = helm("lint", str(CHART), *(["--strict"] if strict else []))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


def test_the_chart_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["name"]) == ("v2", "lahar")
    assert chart["version"] == chart["appVersion"] == extender.__version__


def _texts(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir() if p.suffix == ".yaml"}


def test_the_chart_copies_are_the_canonical_files() -> None:
    """The policy files the ConfigMaps carry (manifests/base/policy/, and the beside-Volcano
    scheduler configuration) and the CRDs (what manifests/crds/ applies: `lahar crds --write`
    copies them) are the chart's byte for byte."""
    assert _texts(CHART / "files" / "policy") == _texts(manifests_dir() / "base" / "policy")
    beside = "kube-scheduler-config.yaml"
    assert (CHART / "files" / "beside-volcano" / beside).read_text() == (
        manifests_dir() / "beside-volcano" / beside
    ).read_text()
    crds = manifests_dir() / "crds"
    listed = yaml.safe_load((crds / "kustomization.yaml").read_text())["resources"]
    assert _texts(CHART / "crds") == {name: (crds / name).read_text() for name in listed}


# -- each value's effect ---------------------------------------------------------------------

ABSENT = object()  # (a field the render with the value does not have)
Step = str | int | dict[str, str]  # a key, an index, or the list item with these fields


def dig(value: Any, path: tuple[Step, ...]) -> Any:
    for step in path:
        if isinstance(step, dict):
            value = next((i for i in value if step.items() <= i.items()), ABSENT)
        elif isinstance(step, int):
            value = value[step] if step < len(value) else ABSENT
        else:
            value = value.get(step, ABSENT)
        if value is ABSENT:
            return ABSENT
    return value


def pod(*path: Step) -> tuple[Step, ...]:
    return ("spec", "template", "spec", *path)


def container(name: str, *path: Step) -> tuple[Step, ...]:
    return pod("containers", {"name": name}, *path)


def _stem(doc: dict[str, Any]) -> str:
    """Kind/name, a generated ConfigMap's without its hash."""
    name = doc["metadata"]["name"]
    if doc["kind"] == "ConfigMap":
        name = re.sub(r"-[a-z0-9]{10}$", "", name)
    return f"{doc['kind']}/{name}"


def _by_stem(objects: Objects) -> dict[str, dict[str, Any]]:
    return {_stem(d): d for d in objects}


@dataclass(frozen=True)
class Effect:
    name: str
    values: dict[str, Any]  # as a values file has them
    changed: frozenset[str]  # Kind/name of every object that differs from the render without them
    fields: tuple[tuple[str, tuple[Step, ...], Any], ...] = ()  # (Kind/name, path, value)
    base: dict[str, Any] = field(default_factory=dict)  # values both renders have


SCHEDULER, CONTROLLER, WEBHOOK = (
    "Deployment/lahar-scheduler",
    "Deployment/lahar-controller",
    "Deployment/lahar-webhook",
)
EXTENDER = "Deployment/lahar-extender"
COMPONENTS = frozenset({SCHEDULER, CONTROLLER, WEBHOOK})
SERVICE = {"extenderForm": "service"}
SHIPPED = manifests_dir() / "base" / "policy"
CUSTOM_POLICY = (
    (SHIPPED / "lahar.yaml")
    .read_text()
    .replace("sla.waitingTimeSeconds: 120", "sla.waitingTimeSeconds: 300")
)
THREE_NAMES = ["lahar", "volcano", "coscheduling"]
NAME_FLAGS = [f"--scheduler-name={name}" for name in THREE_NAMES]
GATE = ("webhooks", {"name": "pod-gang-gate.lahar.dev"}, "matchConditions")
PROMETHEUS_PEER = {
    "namespaceSelector": {},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
}
TOLERATION = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
LOG_FLAGS = ["--log-format=json", "--log-level=debug"]
NODE_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}
        ]
    }
}

EFFECTS = [
    Effect(
        "image",
        {
            "image": {
                "repository": "registry.example.com/lahar",
                "tag": "9.9.9",
                "pullPolicy": "Always",
            }
        },
        COMPONENTS,
        (
            (CONTROLLER, container("controller", "image"), "registry.example.com/lahar:9.9.9"),
            (CONTROLLER, container("controller", "imagePullPolicy"), "Always"),
            (WEBHOOK, container("webhook", "image"), "registry.example.com/lahar:9.9.9"),
            (SCHEDULER, container("extender", "image"), "registry.example.com/lahar:9.9.9"),
            (
                SCHEDULER,
                container("kube-scheduler", "image"),
                "registry.k8s.io/kube-scheduler:v1.37.2",
            ),
            (SCHEDULER, container("kube-scheduler", "imagePullPolicy"), ABSENT),
        ),
    ),
    Effect(
        "image, standalone extender",
        {"image": {"tag": "9.9.9"}},
        frozenset({CONTROLLER, WEBHOOK, EXTENDER}),
        (
            (EXTENDER, pod("initContainers", {"name": "issue-certs"}, "image"), "lahar:9.9.9"),
            (EXTENDER, container("extender", "image"), "lahar:9.9.9"),
            (EXTENDER, container("renew-certs", "image"), "lahar:9.9.9"),
        ),
        SERVICE,
    ),
    Effect(
        "imagePullSecrets",
        {"imagePullSecrets": [{"name": "registry"}]},
        COMPONENTS,
        tuple((c, pod("imagePullSecrets"), [{"name": "registry"}]) for c in sorted(COMPONENTS)),
    ),
    Effect(
        "kube-scheduler image",
        {
            "scheduler": {
                "kubeScheduler": {"image": {"tag": "v1.35.4", "pullPolicy": "IfNotPresent"}}
            }
        },
        frozenset({SCHEDULER}),
        (
            (
                SCHEDULER,
                container("kube-scheduler", "image"),
                "registry.k8s.io/kube-scheduler:v1.35.4",
            ),
            (SCHEDULER, container("kube-scheduler", "imagePullPolicy"), "IfNotPresent"),
            (SCHEDULER, container("extender", "image"), "lahar:0.1.0"),
        ),
    ),
    Effect(
        "kube-scheduler feature gates (native PodGroups)",
        {"scheduler": {"kubeScheduler": {"featureGates": {"GenericWorkload": True}}}},
        frozenset({SCHEDULER}),
        (
            (
                SCHEDULER,
                container("kube-scheduler", "command"),
                [
                    "kube-scheduler",
                    "--config=/etc/lahar/scheduler/kube-scheduler-config.yaml",
                    "--cert-dir=/tmp/kube-scheduler",
                    "--feature-gates=GenericWorkload=true",
                ],
            ),
        ),
    ),
    Effect(
        "replicas",
        {"scheduler": {"replicas": 3}, "controller": {"replicas": 4}, "webhook": {"replicas": 5}},
        COMPONENTS,
        (
            (SCHEDULER, ("spec", "replicas"), 3),
            (CONTROLLER, ("spec", "replicas"), 4),
            (WEBHOOK, ("spec", "replicas"), 5),
        ),
    ),
    Effect(
        "one replica: no disruption budget",
        {"webhook": {"replicas": 1}},
        frozenset({WEBHOOK, "PodDisruptionBudget/lahar-webhook"}),
        ((WEBHOOK, ("spec", "replicas"), 1), ("PodDisruptionBudget/lahar-webhook", (), ABSENT)),
    ),
    Effect(
        "standalone extender replicas",
        {"extender": {"replicas": 3}},
        frozenset({EXTENDER}),
        ((EXTENDER, ("spec", "replicas"), 3),),
        SERVICE,
    ),
    Effect(
        "policy.file",
        {"policy": {"file": "preemption.yaml"}},
        frozenset({SCHEDULER}),
        (
            (
                SCHEDULER,
                container("extender", "args", 4),
                "--policy=/etc/lahar/policy/preemption.yaml",
            ),
        ),
    ),
    Effect(
        "policy.file, standalone extender",
        {"policy": {"file": "preemption.yaml"}},
        frozenset({EXTENDER}),
        (
            (
                EXTENDER,
                container("extender", "args", 2),
                "--policy=/etc/lahar/policy/preemption.yaml",
            ),
        ),
        SERVICE,
    ),
    Effect(
        "policy.lahar",
        {"policy": {"lahar": CUSTOM_POLICY}},
        frozenset({"ConfigMap/lahar-policy", SCHEDULER}),
        (
            ("ConfigMap/lahar-policy", ("data", "lahar.yaml"), CUSTOM_POLICY),
            (
                "ConfigMap/lahar-policy",
                ("data", "preemption.yaml"),
                (SHIPPED / "preemption.yaml").read_text(),
            ),
        ),
    ),
    Effect(
        "policy.scaleUp",
        {"policy": {"scaleUp": "provisioningRequest"}},
        frozenset({"ConfigMap/lahar-policy", SCHEDULER}),
    ),
    Effect(
        "schedulerNames",
        {"schedulerNames": THREE_NAMES},
        frozenset(
            {
                *COMPONENTS,
                "ConfigMap/lahar-scheduler-config",
                "MutatingWebhookConfiguration/lahar-webhook",
            }
        ),
        (
            (
                CONTROLLER,
                container("controller", "args"),
                ["controller", "--leader-elect", *NAME_FLAGS],
            ),
            (WEBHOOK, container("webhook", "args"), ["webhook", *NAME_FLAGS]),
            (
                "MutatingWebhookConfiguration/lahar-webhook",
                (*GATE, {"name": "lahar-scheduler"}, "expression"),
                expression(THREE_NAMES),
            ),
        ),
    ),
    Effect(
        "schedulerNames, standalone extender",
        {"schedulerNames": THREE_NAMES},
        frozenset(
            {
                CONTROLLER,
                WEBHOOK,
                EXTENDER,
                "ConfigMap/lahar-scheduler-config",
                "MutatingWebhookConfiguration/lahar-webhook",
            }
        ),
        (
            (
                EXTENDER,
                container("extender", "args"),
                [
                    "serve",
                    "--host=0.0.0.0",
                    "--policy=/etc/lahar/policy/lahar.yaml",
                    "--tls-cert-file=/run/lahar/tls/tls.crt",
                    "--tls-key-file=/run/lahar/tls/tls.key",
                    "--client-ca-file=/run/lahar/tls/ca.crt",
                    "--leader-elect",
                    *(f"--served-scheduler={name}" for name in THREE_NAMES),
                ],
            ),
        ),
        SERVICE,
    ),
    Effect(
        "namespace.create",
        {"namespace": {"create": False}},
        frozenset({"Namespace/lahar-system"}),
        (("Namespace/lahar-system", (), ABSENT),),
    ),
    Effect(
        "podSecurity",
        {"podSecurity": {"enforce": "baseline", "enforceVersion": "v1.35", "warn": ""}},
        frozenset({"Namespace/lahar-system"}),
        (
            (
                "Namespace/lahar-system",
                ("metadata", "labels"),
                {
                    "app.kubernetes.io/part-of": "lahar",
                    "pod-security.kubernetes.io/enforce": "baseline",
                    "pod-security.kubernetes.io/enforce-version": "v1.35",
                    "pod-security.kubernetes.io/audit": "restricted",
                },
            ),
        ),
    ),
    Effect(
        "priorityClassName",
        {"controller": {"priorityClassName": ""}, "webhook": {"priorityClassName": "lahar-high"}},
        frozenset({CONTROLLER, WEBHOOK}),
        (
            (CONTROLLER, pod("priorityClassName"), ABSENT),
            (WEBHOOK, pod("priorityClassName"), "lahar-high"),
        ),
    ),
    Effect(
        "resources",
        {
            "controller": {"resources": {"limits": {"memory": "1Gi"}}},
            "scheduler": {"kubeScheduler": {"resources": {"requests": {"cpu": "200m"}}}},
        },
        frozenset({CONTROLLER, SCHEDULER}),
        (
            (
                CONTROLLER,
                container("controller", "resources"),
                {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
            ),
            (SCHEDULER, container("kube-scheduler", "resources", "requests", "cpu"), "200m"),
            (SCHEDULER, container("extender", "resources", "requests", "cpu"), "250m"),
        ),
    ),
    Effect(
        "standalone extender resources",
        {"extender": {"issueCerts": {"resources": {"requests": {"cpu": "20m"}}}}},
        frozenset({EXTENDER}),
        (
            (
                EXTENDER,
                pod("initContainers", {"name": "issue-certs"}, "resources", "requests", "cpu"),
                "20m",
            ),
        ),
        SERVICE,
    ),
    Effect(
        "nodeSelector and tolerations",
        {"webhook": {"nodeSelector": {"disktype": "ssd"}, "tolerations": [TOLERATION]}},
        frozenset({WEBHOOK}),
        (
            (WEBHOOK, pod("nodeSelector"), {"disktype": "ssd"}),
            (WEBHOOK, pod("tolerations"), [TOLERATION]),
        ),
    ),
    Effect(
        "affinity",
        {
            "scheduler": {"affinity": {"podAntiAffinity": None}},
            "controller": {"affinity": {"nodeAffinity": NODE_AFFINITY}},
        },
        frozenset({SCHEDULER, CONTROLLER}),
        (
            (SCHEDULER, pod("affinity"), ABSENT),
            (CONTROLLER, pod("affinity", "nodeAffinity"), NODE_AFFINITY),
            (
                CONTROLLER,
                pod(
                    "affinity",
                    "podAntiAffinity",
                    "preferredDuringSchedulingIgnoredDuringExecution",
                    0,
                    "weight",
                ),
                100,
            ),
        ),
    ),
    Effect(
        "networkPolicy.enabled",
        {"networkPolicy": {"enabled": False}},
        frozenset({f"NetworkPolicy/lahar-{c}" for c in ("controller", "webhook", "scheduler")}),
    ),
    Effect(
        "networkPolicy.prometheus",
        {
            "networkPolicy": {
                "prometheus": {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    },
                    "podSelector": {"matchLabels": {"app.kubernetes.io/name": None, "app": "prom"}},
                }
            }
        },
        frozenset({"NetworkPolicy/lahar-controller", "NetworkPolicy/lahar-scheduler"}),
        (
            (
                "NetworkPolicy/lahar-controller",
                ("spec", "ingress", 0, "from"),
                [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                        },
                        "podSelector": {"matchLabels": {"app": "prom"}},
                    }
                ],
            ),
        ),
    ),
    Effect(
        "networkPolicy.webhookFrom",
        {"networkPolicy": {"webhookFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}]}},
        frozenset({"NetworkPolicy/lahar-webhook"}),
        (
            (
                "NetworkPolicy/lahar-webhook",
                ("spec", "ingress", 0, "from"),
                [{"ipBlock": {"cidr": "10.0.0.0/24"}}, PROMETHEUS_PEER],
            ),
        ),
    ),
    Effect(
        "networkPolicy.extenderFrom",
        {"networkPolicy": {"extenderFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}]}},
        frozenset({"NetworkPolicy/lahar-extender"}),
        (
            (
                "NetworkPolicy/lahar-extender",
                ("spec", "ingress", 0, "from"),
                [{"ipBlock": {"cidr": "10.0.0.0/24"}}, PROMETHEUS_PEER],
            ),
        ),
        SERVICE,
    ),
    Effect(
        "serviceMonitor labels and interval",
        {"serviceMonitor": {"labels": {"release": "prometheus"}, "interval": "10s"}},
        frozenset({"ServiceMonitor/lahar"}),
        (
            (
                "ServiceMonitor/lahar",
                ("metadata", "labels"),
                {"app.kubernetes.io/part-of": "lahar", "release": "prometheus"},
            ),
            ("ServiceMonitor/lahar", ("spec", "endpoints", 0, "interval"), "10s"),
            ("ServiceMonitor/lahar", ("spec", "endpoints", 1, "interval"), "10s"),
        ),
        {"serviceMonitor": {"enabled": True}},
    ),
    Effect(
        "logs",
        {"logs": {"format": "json", "level": "debug"}},
        COMPONENTS,
        (
            (
                CONTROLLER,
                container("controller", "args"),
                ["controller", "--leader-elect", *LOG_FLAGS],
            ),
            (WEBHOOK, container("webhook", "args"), ["webhook", *LOG_FLAGS]),
            (SCHEDULER, container("extender", "args", -2), LOG_FLAGS[0]),
            (SCHEDULER, container("extender", "args", -1), LOG_FLAGS[1]),
        ),
    ),
    Effect(
        "logs, standalone extender",
        {"logs": {"format": "json"}},
        frozenset({CONTROLLER, WEBHOOK, EXTENDER}),
        (
            (EXTENDER, container("extender", "args", -1), "--log-format=json"),
            (
                EXTENDER,
                pod("initContainers", {"name": "issue-certs"}, "args"),
                ["--log-format=json", "certs", "issue", "--out", "/run/lahar/tls"],
            ),
            (EXTENDER, container("renew-certs", "args", 0), "--log-format=json"),
        ),
        SERVICE,
    ),
]


def _changed(before: Objects, after: Objects) -> set[str]:
    old, new = _by_stem(before), _by_stem(after)
    return {key for key in old.keys() | new.keys() if old.get(key) != new.get(key)}


@pytest.mark.parametrize("effect", EFFECTS, ids=lambda e: e.name)
def test_each_value_changes_what_it_says_and_nothing_else(effect: Effect, tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(effect.base))
    before = template("--values", str(base))
    after = with_values(effect.values, tmp_path, "--values", str(base))
    assert _changed(before, after) == effect.changed
    objects = _by_stem(after)
    for key, path, value in effect.fields:
        found = dig(objects[key], path) if key in objects else ABSENT
        assert found == value, (key, path)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"policy": {"scaleUp": "none"}},
        {"policy": {"scaleUp": "provisioningRequest"}},
        {"policy": {"scaleUp": "unschedulable", "lahar": CUSTOM_POLICY}},
    ],
    ids=json.dumps,
)
def test_the_policies_the_chart_writes_load_as_the_extender_loads_them(
    values: dict[str, Any], tmp_path: Path
) -> None:
    (config_map,) = [
        d for d in with_values(values, tmp_path) if _stem(d) == "ConfigMap/lahar-policy"
    ]
    policy = values.get("policy", {})
    for name, text in config_map["data"].items():
        path = tmp_path / name
        path.write_text(text)
        load_policy(path, REGISTRY)  # (raises, naming the key, what `lahar serve` refuses)
        (gang,) = [
            p for t in yaml.safe_load(text)["tiers"] for p in t["plugins"] if p["name"] == "gang"
        ]
        assert gang["arguments"].get("gang.scaleUp") == policy.get("scaleUp")
        if "lahar" in policy and name == "lahar.yaml":
            assert yaml.safe_load(text)["tiers"][0]["plugins"][0]["arguments"] == {
                "sla.waitingTimeSeconds": 300
            }


@pytest.mark.parametrize(
    ("values", "namespace", "profiles"),
    [
        ({}, NAMESPACE, ["lahar", "volcano"]),
        ({"besideVolcano": True}, NAMESPACE, ["lahar"]),
        ({"schedulerNames": THREE_NAMES}, NAMESPACE, THREE_NAMES),
        ({}, "batch-system", ["lahar", "volcano"]),
        ({"besideVolcano": True, "schedulerNames": ["volcano", "gpu"]}, "batch-system", ["gpu"]),
    ],
)
def test_the_scheduler_configuration_the_chart_writes_is_what_lahar_serve_accepts(
    values: dict[str, Any], namespace: str, profiles: list[str], tmp_path: Path
) -> None:
    """Its profiles are the names served and its Lease is in the release's namespace, where the
    extender follows it; `lahar serve --scheduler-config` finds nothing in it to refuse."""
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    objects = _by_stem(template("--values", str(path), namespace=namespace))
    config = yaml.safe_load(
        objects["ConfigMap/lahar-scheduler-config"]["data"]["kube-scheduler-config.yaml"]
    )
    assert [p["schedulerName"] for p in config["profiles"]] == profiles
    policy = load_policy(SHIPPED / "lahar.yaml", REGISTRY)
    assert config_problems(config, policy, "the chart") == []
    assert profile_names(config) == frozenset(profiles)
    election = config["leaderElection"]
    args = dig(objects[SCHEDULER], container("extender", "args"))
    assert f"--follow-scheduler-lease={election['resourceNamespace']}/lahar-scheduler" in args
    assert election["resourceNamespace"] == namespace


def test_every_object_goes_to_the_release_namespace_and_names_it() -> None:
    objects = template("--include-crds", namespace="batch-system")
    text = yaml.safe_dump_all(objects)
    assert "lahar-system" not in text
    for doc in objects:
        namespace = doc["metadata"].get("namespace")
        assert namespace in {None, "batch-system", "kube-system"}, _key(doc)
        for subject in doc.get("subjects", []):
            assert subject["namespace"] == "batch-system"
        for hook in doc.get("webhooks", []):
            assert hook["clientConfig"]["service"]["namespace"] == "batch-system"
    (namespace_doc,) = [d for d in objects if d["kind"] == "Namespace"]
    assert namespace_doc["metadata"]["name"] == "batch-system"
    (reader,) = [d for d in objects if d["metadata"].get("namespace") == "kube-system"]
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"


BAD = [  # values -> what the refusal names
    ({"scheduler": {"replicas": "two"}}, "at '/scheduler/replicas': got string, want integer"),
    ({"image": {"tgs": "1"}}, "at '/image': additional properties 'tgs' not allowed"),
    ({"extenderForm": "sidecar"}, "at '/extenderForm'"),
    ({"policy": {"file": "lahar.conf"}}, "at '/policy/file'"),
    ({"policy": {"scaleUp": "atomic"}}, "at '/policy/scaleUp'"),
    ({"schedulerNames": ["Lahar_1"]}, "at '/schedulerNames/0'"),
    ({"schedulerNames": []}, "at '/schedulerNames'"),
    ({"podSecurity": {"enforce": "strict"}}, "at '/podSecurity/enforce'"),
    (
        {"networkPolicy": {"enabled": "yes"}},
        "at '/networkPolicy/enabled': got string, want boolean",
    ),
    ({"controller": {"tolerations": {"key": "x"}}}, "at '/controller/tolerations'"),
    (
        {"scheduler": {"kubeScheduler": {"featureGates": {"GenericWorkload": "on"}}}},
        "at '/scheduler/kubeScheduler/featureGates/GenericWorkload'",
    ),
    ({"serviceMonitor": {"interval": "often"}}, "at '/serviceMonitor/interval'"),
    ({"logs": {"format": "xml"}}, "at '/logs/format'"),
    ({"logs": {"level": "trace"}}, "at '/logs/level'"),
    ({"imagePullSecrets": ["registry"]}, "at '/imagePullSecrets/0'"),
    ({"besideVolcano": True, "schedulerNames": ["volcano"]}, "schedulerNames: besideVolcano"),
    ({"policy": {"lahar": "- a list"}}, "policy.lahar: not a YAML mapping"),
    (
        {"policy": {"lahar": "apiVersion: lahar.io/v1alpha1\ntiers: []\n", "scaleUp": "none"}},
        "policy.scaleUp: the policy lahar.yaml has no gang plugin",
    ),
]


@pytest.mark.parametrize(("values", "said"), BAD, ids=json.dumps)
def test_a_bad_value_is_refused_naming_its_key(
    values: dict[str, Any], said: str, tmp_path: Path
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    done = helm("template", "lahar", str(CHART), "--namespace", NAMESPACE, "--values", str(path))
    assert done.returncode != 0
    assert said in done.stderr, done.stderr


# -- on the API server ------------------------------------------------------------------------

EVERY_VALUE = {  # a value of every kind changed (that the dev cluster can take: no ServiceMonitor)
    "image": {"repository": "registry.example.com/lahar", "tag": "9.9.9", "pullPolicy": "Always"},
    "imagePullSecrets": [{"name": "registry"}],
    "schedulerNames": THREE_NAMES,
    "policy": {"file": "preemption.yaml", "scaleUp": "provisioningRequest"},
    "scheduler": {
        "replicas": 3,
        "kubeScheduler": {"image": {"tag": "v1.35.4"}, "featureGates": {"GenericWorkload": True}},
    },
    "controller": {"replicas": 1, "nodeSelector": {"disktype": "ssd"}},
    "webhook": {"tolerations": [TOLERATION], "affinity": {"nodeAffinity": NODE_AFFINITY}},
    "networkPolicy": {
        "webhookFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
        "prometheus": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}
        },
    },
}
SERVER_FORMS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "default, with the CRDs": ({}, ["--include-crds"]),
    "extenderForm=service": ({"extenderForm": "service"}, []),
    "besideVolcano=true": ({"besideVolcano": True}, []),
    "every value changed": (EVERY_VALUE, []),
    "every value changed, standalone extender": ({**EVERY_VALUE, **SERVICE}, []),
}


@pytest.mark.parametrize("form", sorted(SERVER_FORMS))
def test_the_api_server_accepts_every_object_the_chart_renders(
    dev_cluster: devcluster.DevCluster, form: str, tmp_path: Path
) -> None:
    values, flags = SERVER_FORMS[form]
    documents = with_values(values, tmp_path, *flags)
    result = server_dry_run(dev_cluster, documents, tmp_path)
    assert result.returncode == 0, result.stderr
    accepted = [line for line in result.stdout.splitlines() if "(server dry run)" in line]
    assert len(accepted) == len(documents), result.stdout


@pytest.mark.parametrize(
    "form", ["every value changed", "every value changed, standalone extender"]
)
def test_every_pod_the_chart_renders_passes_pod_security_restricted(
    api: k8s.ApiClient, form: str, tmp_path: Path
) -> None:
    values, flags = SERVER_FORMS[form]
    documents = with_values(values, tmp_path, *flags)
    name = f"chart-pod-security-{secrets.token_hex(3)}"
    with namespace_like(api, documents, name):
        answers = pod_answers(api, documents, name)
    assert answers == dict.fromkeys(deployments(documents), CRITICAL)
