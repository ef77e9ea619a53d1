"""The scheduler names the webhook writes into its configurations: the expression, the
conditions it rewrites (only `lahar-scheduler`, in whichever webhook has one), and the writes
(none when right, a conflict read again, a missing configuration named)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError
from extender.webhook import conditions
from extender.webhook.conditions import CONDITION, SchedulerNames, expression, with_names

WEBHOOKS = Path(__file__).parents[3] / "manifests" / "base" / "webhook.yaml"
MUTATING = ("MutatingWebhookConfiguration", "lahar-webhook")
VALIDATING = ("ValidatingWebhookConfiguration", "lahar-webhook")


def shipped(kind: str) -> dict[str, Any]:
    config: dict[str, Any] = next(
        d for d in yaml.safe_load_all(WEBHOOKS.read_text()) if d and d["kind"] == kind
    )
    return config


@pytest.mark.parametrize(
    ("names", "said"),
    [
        (["lahar", "volcano"], "object.spec.schedulerName in ['lahar', 'volcano']"),
        (["volcano", "lahar", "lahar"], "object.spec.schedulerName in ['lahar', 'volcano']"),
        (["lahar"], "object.spec.schedulerName in ['lahar']"),
        (
            ["lahar", "volcano", "coscheduling"],
            "object.spec.schedulerName in ['coscheduling', 'lahar', 'volcano']",
        ),
    ],
    ids=["shipped", "any-order-once", "one", "three"],
)
def test_the_expression_names_each_scheduler_once_sorted(names: list[str], said: str) -> None:
    assert expression(names) == said


@pytest.mark.parametrize("names", [[], ["lahar", "x']"], ["Lahar"]])
def test_names_that_are_not_dns_subdomains_are_refused(names: list[str]) -> None:
    with pytest.raises(ValueError, match="DNS subdomains"):
        expression(names)


def test_the_shipped_condition_is_the_default_names_expression() -> None:
    config = shipped(MUTATING[0])
    assert with_names(config, expression(["lahar", "volcano"])) == (False, 1)


def test_only_the_pod_webhooks_scheduler_condition_is_rewritten() -> None:
    config = shipped(MUTATING[0])
    before = copy.deepcopy(config)
    assert with_names(config, expression(["lahar"])) == (True, 1)
    changed = [
        (hook["name"], condition["name"])
        for old, hook in zip(before["webhooks"], config["webhooks"], strict=True)
        for was, condition in zip(
            old.get("matchConditions") or [], hook.get("matchConditions") or [], strict=True
        )
        if was != condition
    ]
    assert changed == [("pod-gang-gate.lahar.dev", CONDITION)]
    assert with_names(config, expression(["lahar"])) == (False, 1)  # (written once)
    assert with_names(shipped(VALIDATING[0]), expression(["lahar"])) == (False, 0)


class FakeApi:
    """The configurations as stored; `conflicts` replaces answer 409 first."""

    def __init__(self, *, conflicts: int = 0, missing: bool = False) -> None:
        self.stored = {} if missing else {MUTATING: shipped(MUTATING[0])}
        if not missing:
            self.stored[VALIDATING] = shipped(VALIDATING[0])
        self.conflicts = conflicts
        self.reads = self.writes = 0

    def get(self, api: object, api_version: str, kind: str, ns: str, name: str) -> Any:
        self.reads += 1
        found = self.stored.get((kind, name))
        return copy.deepcopy(found) if found is not None else None

    def replace(self, api: object, body: dict[str, Any]) -> dict[str, Any]:
        if self.conflicts:
            self.conflicts -= 1
            raise ApiStatusError("conflict", 409)
        self.writes += 1
        self.stored[(body["kind"], body["metadata"]["name"])] = copy.deepcopy(body)
        return body


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    api = FakeApi()
    monkeypatch.setattr(conditions, "get", api.get)
    monkeypatch.setattr(conditions, "replace", api.replace)
    return api


def pod_condition(api: FakeApi) -> str:
    (hook,) = [h for h in api.stored[MUTATING]["webhooks"] if h["name"].startswith("pod-")]
    (condition,) = [c for c in hook["matchConditions"] if c["name"] == CONDITION]
    return str(condition["expression"])


def test_publishing_writes_the_names_once(fake: FakeApi) -> None:
    names = SchedulerNames(None, (MUTATING, VALIDATING), ["lahar"])  # type: ignore[arg-type]
    assert not names.published
    assert names.publish() == ["MutatingWebhookConfiguration lahar-webhook"]
    assert names.published
    assert pod_condition(fake) == "object.spec.schedulerName in ['lahar']"
    assert names.publish() == []  # (right already: nothing written)
    assert fake.writes == 1


def test_the_shipped_names_write_nothing(fake: FakeApi) -> None:
    names = SchedulerNames(None, (MUTATING, VALIDATING), ["volcano", "lahar"])  # type: ignore[arg-type]
    assert names.publish() == []
    assert (fake.writes, names.published) == (0, True)


def test_a_conflict_is_read_again(fake: FakeApi) -> None:
    fake.conflicts = 2
    names = SchedulerNames(None, (MUTATING,), ["lahar"])  # type: ignore[arg-type]
    assert names.publish() == ["MutatingWebhookConfiguration lahar-webhook"]
    assert (fake.reads, fake.writes) == (3, 1)


def test_conflicts_that_go_on_raise_and_nothing_is_published(fake: FakeApi) -> None:
    fake.conflicts = 5
    names = SchedulerNames(None, (MUTATING,), ["lahar"])  # type: ignore[arg-type]
    with pytest.raises(ApiStatusError):
        names.publish()
    assert not names.published


def test_a_missing_configuration_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(missing=True)
    monkeypatch.setattr(conditions, "get", api.get)
    names = SchedulerNames(None, (MUTATING,), ["lahar"])  # type: ignore[arg-type]
    with pytest.raises(KubeError, match="MutatingWebhookConfiguration lahar-webhook not found"):
        names.publish()
