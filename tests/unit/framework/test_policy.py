"""The policy file is validated at start: every problem names the file, the key and the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.api.engine_settings import GangSettings, ScaleUpSettings
from extender.api.scale_up import Mode
from extender.framework.policy import PolicyError, build_policy, load_policy, parse_policy
from extender.plugins import REGISTRY
from extender.plugins.binpack import Binpack
from extender.plugins.predicates import Predicates

REPO_POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"


def policy(*tiers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "SchedulerPolicy",
        "tiers": [{"plugins": plugins} for plugins in tiers],
    }


def test_the_shipped_policy_loads_and_evicts_nothing() -> None:
    loaded = load_policy(REPO_POLICY, REGISTRY)
    assert [p.name for p in loaded.plugins] == [
        "sla",
        "priority",
        "gang",
        "predicates",
        "drf",
        "proportion",
        "binpack",
    ]
    assert loaded.ordering.starving_after == 120
    assert loaded.ordering.by_queue_share
    assert loaded.preemption is None  # as Volcano's shipped actions: enqueue, allocate, backfill
    assert loaded.gang_settings == GangSettings(
        barrier_timeout=20, backoff=10, reservation_timeout=60
    )


def test_the_preemption_policy_is_the_shipped_one_with_the_preempt_plugin() -> None:
    shipped = yaml.safe_load(REPO_POLICY.read_text())
    preempting = yaml.safe_load(REPO_POLICY.with_name("preemption.yaml").read_text())
    first = preempting["tiers"][0]["plugins"]
    [preempt] = [p for p in first if p["name"] == "preempt"]
    first.remove(preempt)
    assert preempting == shipped
    assert preempt["arguments"]["preempt.actions"] == "preempt, reclaim"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"gang.backoffSeconds": 0}, "gang.backoffSeconds: must be a number of seconds > 0, got 0"),
        ({"gang.barrierTimeoutSeconds": "5s"}, "gang.barrierTimeoutSeconds: must be a number"),
        ({"gang.timeout": 5}, "gang.timeout: unknown argument of plugin gang"),
        (
            {"gang.scaleUp": "atomic"},
            "gang.scaleUp: 'atomic' is not a scale-up mode (one of none, provisioningRequest, "
            "unschedulable)",
        ),
        ({"gang.scaleUpRetrySeconds": -1}, "gang.scaleUpRetrySeconds: must be a number of sec"),
    ],
)
def test_gang_arguments_are_checked(arguments: dict[str, object], expected: str) -> None:
    with pytest.raises(PolicyError) as error:
        build_policy(policy([{"name": "gang", "arguments": arguments}]), REGISTRY)
    assert f"tiers.0.plugins.0.arguments.{expected}" in str(error.value)


def test_the_scale_up_mode_is_read_from_the_gang_arguments() -> None:
    arguments = {"gang.scaleUp": "provisioningRequest", "gang.scaleUpRetrySeconds": 30}
    built = build_policy(policy([{"name": "gang", "arguments": arguments}]), REGISTRY)
    assert built.gang_settings is not None
    assert built.gang_settings.scale_up == ScaleUpSettings(Mode.PROVISIONING_REQUEST, retry=30)


def test_without_the_gang_plugin_there_are_no_gang_rules() -> None:
    assert build_policy(policy([{"name": "predicates"}]), REGISTRY).gang_settings is None


def test_plugins_get_their_arguments() -> None:
    built = build_policy(
        policy(
            [{"name": "predicates"}],
            [
                {
                    "name": "binpack",
                    "arguments": {
                        "binpack.weight": 5,
                        "binpack.cpu": 2,
                        "binpack.memory": 1,
                        "binpack.resources": "nvidia.com/gpu",
                        "binpack.resources.nvidia.com/gpu": 4,
                    },
                }
            ],
        ),
        REGISTRY,
    )
    assert isinstance(built.filters[0], Predicates)
    binpack = built.scorers[0]
    assert isinstance(binpack, Binpack)
    assert binpack.weight == 5
    assert binpack.resource_weights == {"cpu": 2, "memory": 1, "nvidia.com/gpu": 4}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "p.yaml: must be a YAML mapping"),
        ({**policy([{"name": "binpack"}]), "kind": "Other"}, "p.yaml: kind: Input should be"),
        ({**policy([{"name": "binpack"}]), "extra": 1}, "p.yaml: extra: Extra inputs"),
        (policy(), "p.yaml: tiers: List should have at least 1 item"),
        (policy([]), "p.yaml: tiers.0.plugins: List should have at least 1 item"),
        (
            policy([{"name": "overcommit"}]),
            "p.yaml: tiers.0.plugins.0.name: unknown plugin 'overcommit' (known: binpack, "
            "drf, gang, predicates, preempt, priority, proportion, sla, spread)",
        ),
        (
            policy([{"name": "binpack"}], [{"name": "binpack"}]),
            "p.yaml: tiers.1.plugins.0.name: plugin 'binpack' is already in tiers.0.plugins.0",
        ),
        (
            policy([{"name": "binpack", "arguments": {"binpack.cpu": "x"}}]),
            "p.yaml: tiers.0.plugins.0.arguments.binpack.cpu: must be a whole number >= 0, got 'x'",
        ),
        (
            policy([{"name": "binpack", "arguments": {"binpack.weight": -1}}]),
            "tiers.0.plugins.0.arguments.binpack.weight: must be a whole number >= 0, got -1",
        ),
        (
            policy([{"name": "spread", "arguments": {"binpack.cpu": 1}}]),
            "tiers.0.plugins.0.arguments.binpack.cpu: unknown argument of plugin spread",
        ),
        (
            policy([{"name": "predicates", "arguments": {"x": 1}}]),
            "tiers.0.plugins.0.arguments.x: unknown argument of plugin predicates (known: none)",
        ),
        (
            policy([{"name": "binpack", "arguments": {"binpack.resources": 3}}]),
            "binpack.resources: must be a comma-separated list",
        ),
    ],
)
def test_invalid_policies_name_the_key(document: object, message: str) -> None:
    with pytest.raises(PolicyError) as error:
        build_policy(document, REGISTRY, source="p.yaml")
    assert message in str(error.value)


def test_policy_text_is_built_as_its_file_is() -> None:
    parsed = parse_policy(REPO_POLICY.read_text(encoding="utf-8"), REGISTRY, source="here")
    loaded = load_policy(REPO_POLICY, REGISTRY)
    assert parsed.source == "here"
    assert [[p.name for p in t] for t in parsed.tiers] == [
        [p.name for p in t] for t in loaded.tiers
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tiers: [\n", "policy ConfigMap lahar-system/policy key lahar.yaml: not valid YAML"),
        ("- a list\n", "ConfigMap lahar-system/policy key lahar.yaml: must be a YAML mapping"),
    ],
)
def test_policy_text_errors_name_its_source(text: str, message: str) -> None:
    where = "ConfigMap lahar-system/policy key lahar.yaml"
    with pytest.raises(PolicyError) as error:
        parse_policy(text, REGISTRY, source=where)
    assert message in str(error.value)


def test_unreadable_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"cannot read it"):
        load_policy(tmp_path / "missing.yaml", REGISTRY)
    broken = tmp_path / "broken.yaml"
    broken.write_text("tiers: [\n")
    with pytest.raises(PolicyError, match=rf"policy {broken}: not valid YAML"):
        load_policy(broken, REGISTRY)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(PolicyError, match=rf"policy {binary}: not UTF-8 text: invalid start byte"):
        load_policy(binary, REGISTRY)
