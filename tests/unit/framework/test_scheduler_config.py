"""The kube-scheduler configuration is checked against Lahar's policy: the files shipped agree,
and each departure is named with its field and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.api.scheduling import SERVED_SCHEDULERS as SCHEDULERS
from extender.framework.policy import load_policy
from extender.framework.scheduler_config import config_problems, fit_arguments, profile_names
from extender.plugins import REGISTRY

POLICY_DIR = Path(__file__).resolve().parents[3] / "policy"
POLICY = load_policy(POLICY_DIR / "lahar.yaml", REGISTRY)
SHIPPED = ("kube-scheduler-config.yaml", "kube-scheduler-config-service.yaml")
WEBHOOKS = Path(__file__).resolve().parents[3] / "manifests" / "base" / "webhook.yaml"


def shipped(name: str = SHIPPED[0]) -> dict[str, Any]:
    document = yaml.safe_load((POLICY_DIR / name).read_text())
    assert isinstance(document, dict)
    return json.loads(json.dumps(document))  # (the profiles' YAML aliases made apart)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_shipped_configurations_fit_the_policy(name: str) -> None:
    config = shipped(name)
    assert config_problems(config, POLICY, name) == []
    assert profile_names(config) == frozenset(SCHEDULERS)
    for profile in config["profiles"]:
        fit = next(c for c in profile["pluginConfig"] if c["name"] == "NodeResourcesFit")
        assert fit["args"] == fit_arguments(POLICY)


def test_the_webhook_gates_the_pods_of_the_profiles_served() -> None:
    hooks = next(
        d
        for d in yaml.safe_load_all(WEBHOOKS.read_text())
        if d and d["kind"] == "MutatingWebhookConfiguration"
    )
    [gate] = [
        h for h in hooks["webhooks"] if h["clientConfig"]["service"]["path"] == "/mutate/pods"
    ]
    [condition] = [c for c in gate["matchConditions"] if c["name"] == "lahar-scheduler"]
    names = condition["expression"].split(" in ", 1)[1]
    assert sorted(yaml.safe_load(names)) == sorted(SCHEDULERS)


def _without_fit(config: dict[str, Any]) -> None:
    config["profiles"][0]["plugins"]["filter"] = {"disabled": [{"name": "NodeResourcesFit"}]}


def _spread(config: dict[str, Any]) -> None:
    config["profiles"][1]["pluginConfig"][0]["args"]["scoringStrategy"]["type"] = "LeastAllocated"


def _weights(config: dict[str, Any]) -> None:
    strategy = config["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]
    strategy["resources"] = [{"name": "cpu", "weight": 1}]


def _no_fit_config(config: dict[str, Any]) -> None:
    config["profiles"][0]["pluginConfig"] = []


def _timeout(config: dict[str, Any]) -> None:
    config["extenders"][0]["httpTimeout"] = "20s"


def _default_timeout(config: dict[str, Any]) -> None:
    del config["extenders"][0]["httpTimeout"]


def _ignorable(config: dict[str, Any]) -> None:
    config["extenders"][0]["ignorable"] = True


def _no_bind(config: dict[str, Any]) -> None:
    del config["extenders"][0]["bindVerb"]


def _objects(config: dict[str, Any]) -> None:
    config["extenders"][0]["nodeCacheCapable"] = False


def _two(config: dict[str, Any]) -> None:
    config["extenders"].append(dict(config["extenders"][0]))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_without_fit, "profiles.0.plugins.filter.disabled: NodeResourcesFit must run"),
        (_spread, "profiles.1.pluginConfig.0.args.scoringStrategy.type: 'LeastAllocated', but"),
        (_weights, "profiles.0.pluginConfig.0.args.scoringStrategy.resources: weights {'cpu': 1}"),
        (_no_fit_config, "profiles.0.pluginConfig: no NodeResourcesFit entry"),
        (_timeout, "extenders.0.httpTimeout: 20s must be above gang.barrierTimeoutSeconds (20s"),
        (_default_timeout, "extenders.0.httpTimeout: 5s must be above"),
        (_ignorable, "extenders.0.ignorable: must be false"),
        (_no_bind, "extenders.0.bindVerb: missing"),
        (_objects, "extenders.0.nodeCacheCapable: must be true"),
        (_two, "extenders: expected Lahar's one extender, found 2"),
    ],
)
def test_each_departure_is_named(change: Any, expected: str) -> None:
    config = shipped()
    change(config)
    [problem] = config_problems(config, POLICY, "k.yaml")
    assert problem.startswith("k.yaml: ")
    assert expected in problem
