"""What the policy says of preemption: the preempt plugin's actions (`preempt.actions`), each with
the plugin it needs, and `enablePreemptable` beside a plugin's name, switching gang's and drf's
rules on victims (absent: on, as Volcano), an error on any other plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.api.engine_settings import PreemptionSettings, Rules
from extender.framework.policy import PolicyError, build_policy, load_policy
from extender.plugins import REGISTRY

POLICIES = Path(__file__).resolve().parents[3] / "policy"


def policy(*plugins: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "SchedulerPolicy",
        "tiers": [{"plugins": list(plugins)}],
    }


PRIORITY, PROPORTION = {"name": "priority"}, {"name": "proportion"}


def preempt(actions: object = None) -> dict[str, Any]:
    arguments = {} if actions is None else {"preempt.actions": actions}
    return {"name": "preempt", "arguments": arguments}


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ([preempt(), PRIORITY, PROPORTION], Rules(preempt=True, reclaim=True)),
        ([preempt("preempt, reclaim"), PRIORITY, PROPORTION], Rules(preempt=True, reclaim=True)),
        ([preempt("reclaim,preempt"), PRIORITY, PROPORTION], Rules(preempt=True, reclaim=True)),
        ([preempt(["preempt", "reclaim"]), PRIORITY, PROPORTION], Rules()),  # a YAML list
        ([preempt("preempt"), PRIORITY, PROPORTION], Rules(preempt=True, reclaim=False)),
        ([preempt(["reclaim"]), PRIORITY, PROPORTION], Rules(preempt=False, reclaim=True)),
        # Each action still needs its plugin: preempt the priority plugin, reclaim proportion.
        ([preempt("preempt"), PROPORTION], Rules(preempt=False, reclaim=False)),
        ([preempt("reclaim"), PRIORITY], Rules(preempt=False, reclaim=False)),
        ([preempt(), PRIORITY], Rules(preempt=True, reclaim=False)),
    ],
)
def test_the_actions_choose_preempt_and_reclaim_separately(
    plugins: list[dict[str, Any]], expected: Rules
) -> None:
    built = build_policy(policy(*plugins), REGISTRY)
    assert built.preemption == PreemptionSettings(5.0, expected)


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (
            "preempt, evict",
            "tiers.0.plugins.0.arguments.preempt.actions: 'evict' is not an action of Lahar's "
            "preemption (one or both of preempt, reclaim)",
        ),
        (["allocate"], "preempt.actions: 'allocate' is not an action"),
        ("", "preempt.actions: names no action (one or both of preempt, reclaim)"),
        (" , ", "preempt.actions: names no action"),
        ([], "preempt.actions: names no action"),
        (3, "preempt.actions: must be a comma-separated list of words, got 3"),
    ],
)
def test_bad_actions_are_named(actions: object, message: str) -> None:
    with pytest.raises(PolicyError) as error:
        build_policy(policy(preempt(actions)), REGISTRY, source="p.yaml")
    assert message in str(error.value)


GANG, DRF = {"name": "gang"}, {"name": "drf"}


def switched(plugin: dict[str, Any], on: bool | None) -> dict[str, Any]:
    return plugin if on is None else {**plugin, "enablePreemptable": on}


@pytest.mark.parametrize(
    ("gang", "drf", "spares", "shares"),
    [
        (None, None, True, True),  # absent means true, as in Volcano
        (True, True, True, True),
        (False, None, False, True),
        (None, False, True, False),
        (False, False, False, False),  # Volcano's shipped configuration
    ],
)
def test_enable_preemptable_switches_gangs_and_drfs_rules(
    gang: bool | None, drf: bool | None, spares: bool, shares: bool
) -> None:
    built = build_policy(
        policy(switched(GANG, gang), switched(DRF, drf), preempt(), PRIORITY, PROPORTION),
        REGISTRY,
    )
    # (gang's rule holds for reclaim too unless enableReclaimable says otherwise)
    rules = Rules(spare_members_only=spares, reclaims_spares_only=True, keeps_share=shares)
    assert built.preemption == PreemptionSettings(5.0, rules)


@pytest.mark.parametrize(
    ("reclaimable", "spares"),
    [(None, True), (True, True), (False, False)],
    ids=["absent: on, as in Volcano", "on", "off: whole gangs reclaimed"],
)
def test_enable_reclaimable_switches_gangs_rule_for_reclaim(
    reclaimable: bool | None, spares: bool
) -> None:
    gang = GANG if reclaimable is None else {**GANG, "enableReclaimable": reclaimable}
    built = build_policy(policy(gang, preempt(), PRIORITY, PROPORTION), REGISTRY)
    assert built.preemption is not None
    assert built.preemption.rules.reclaims_spares_only is spares


def test_enable_reclaimable_elsewhere_is_an_error() -> None:
    with pytest.raises(PolicyError) as error:
        build_policy(policy({"name": "drf", "enableReclaimable": False}), REGISTRY, source="p.yaml")
    assert str(error.value) == (
        "p.yaml: tiers.0.plugins.0.enableReclaimable: plugin 'drf' has no rule on whom reclaim "
        "may evict to switch (the plugin with one: gang)"
    )


def test_without_gang_or_drf_there_is_no_rule_of_theirs() -> None:
    built = build_policy(policy(preempt(), PRIORITY, PROPORTION), REGISTRY)
    assert built.preemption == PreemptionSettings(5.0, Rules(preempt=True, reclaim=True))
    only_gang = build_policy(policy(GANG, preempt(), PRIORITY), REGISTRY)
    assert only_gang.preemption is not None
    assert only_gang.preemption.rules == Rules(
        reclaim=False, spare_members_only=True, reclaims_spares_only=True
    )


def test_without_the_preempt_plugin_the_switch_changes_nothing() -> None:
    built = build_policy(policy(switched(GANG, False), switched(DRF, True)), REGISTRY)
    assert built.preemption is None


@pytest.mark.parametrize(
    ("plugin", "value", "message"),
    [
        (
            "binpack",
            False,
            "p.yaml: tiers.0.plugins.0.enablePreemptable: plugin 'binpack' has no rule on whom "
            "preempt may evict to switch (plugins with one: drf, gang)",
        ),
        ("priority", True, "tiers.0.plugins.0.enablePreemptable: plugin 'priority' has no rule"),
        ("preempt", False, "tiers.0.plugins.0.enablePreemptable: plugin 'preempt' has no rule"),
        ("gang", "no", "tiers.0.plugins.0.enablePreemptable: Input should be a valid boolean"),
        ("drf", 1, "tiers.0.plugins.0.enablePreemptable: Input should be a valid boolean"),
    ],
)
def test_enable_preemptable_elsewhere_or_not_a_boolean_is_an_error(
    plugin: str, value: object, message: str
) -> None:
    with pytest.raises(PolicyError) as error:
        build_policy(
            policy({"name": plugin, "enablePreemptable": value}), REGISTRY, source="p.yaml"
        )
    assert message in str(error.value)


def test_the_preemption_policy_keeps_volcanos_shipped_switches() -> None:
    """policy/preemption.yaml: both actions, gang and drf `enablePreemptable: false` (whole gangs
    may be victims, no share rule), as Volcano's shipped configuration; and gang's
    `enableReclaimable: false` (whole gangs reclaimed too), which Volcano leaves on."""
    path = POLICIES / "preemption.yaml"
    if not path.exists():
        pytest.skip("no policy/preemption.yaml in this checkout")
    loaded = load_policy(path, REGISTRY)
    assert loaded.preemption == PreemptionSettings(5.0, Rules(preempt=True, reclaim=True))
    assert loaded.unpreemptable == frozenset({"gang", "drf"})
    assert loaded.unreclaimable == frozenset({"gang"})
