"""PodGroup rules on CREATE: the spec parses, counts are 32-bit and not negative, and the queue it
names exists and is Open."""

from __future__ import annotations

from typing import Any

import pytest

from extender.admission.podgroups import check_pod_group
from extender.admission.problems import Problem
from tests.builders import PodGroupBuilder, make_group, make_queue
from tests.unit.admission.helpers import Queues, by_path


def group() -> PodGroupBuilder:
    return make_group("tf").ns("ml").queue("research")


@pytest.mark.parametrize(
    "builder",
    [
        group(),
        group().queue("default"),
        make_group("tf"),  # no queue: the default one
        group().min_member(0),
        group().min_member(2**31 - 1),
        group().min_task("ps", 1).min_task("worker", 0),
        group().min_resources(cpu="4", memory="8Gi", **{"nvidia.com/gpu": "1"}),
        group().phase("Pending"),
        group().set("spec.networkTopology", {"mode": "hard", "highestTierAllowed": 1}),
        group().set("spec.subGroupPolicy", [{"name": "p", "networkTopology": {"mode": "soft"}}]),
    ],
    ids=[
        "research",
        "default",
        "no-queue",
        "min-member-zero",
        "min-member-int32",
        "min-task-member",
        "min-resources",
        "with-status",
        "network-topology",
        "sub-group-network-topology",
    ],
)
def test_good_pod_groups(builder: PodGroupBuilder, queues: Queues) -> None:
    assert check_pod_group(builder.build(), queues) == []


def test_a_missing_default_queue_is_no_problem() -> None:
    assert check_pod_group(make_group("tf").build(), Queues()) == []


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (group().queue("nope"), {"spec.queue": "queue 'nope' does not exist"}),
        (group().queue("closed"), {"spec.queue": "queue 'closed' is Closed: it takes no new work"}),
        (group().queue("closing"), {"spec.queue": "queue 'closing' is Closing"}),
        (group().min_member(-1), {"spec.minMember": "must be from 0 to 2147483647, got -1"}),
        (group().min_member(2**31), {"spec.minMember": "got 2147483648"}),
        (group().min_member(10**30), {"spec.minMember": "got a 31-digit number"}),
        (group().set("spec.minMember", "4"), {"spec.minMember": "valid integer, got '4'"}),
        (
            group().min_task("worker", -2),
            {"spec.minTaskMember.worker": "must be from 0 to 2147483647, got -2"},
        ),
        (group().min_task("ps", 2**32), {"spec.minTaskMember.ps": "got 4294967296"}),
        (
            group().set("spec.minTaskMember", {"ps": "1"}),
            {"spec.minTaskMember.ps": "valid integer, got '1'"},
        ),
        (
            group().min_resources(cpu="four"),
            {"spec.minResources": "cpu: invalid quantity 'four'"},
        ),
        (
            group().min_resources(memory="-1Gi"),
            {"spec.minResources": "memory: must not be negative"},
        ),
        (group().set("spec.queue", 7), {"spec.queue": "valid string, got 7"}),
        (group().set("metadata.annotations", {"a": 1}), {"metadata.annotations.a": "valid string"}),
        (
            group().set("spec.networkTopology", {"highestTierAllowed": 1, "highestTierName": "s"}),
            {"spec.networkTopology": "give highestTierAllowed or highestTierName, not both"},
        ),
        (
            group().set(
                "spec.subGroupPolicy",
                [
                    {
                        "name": "p",
                        "networkTopology": {"highestTierAllowed": 2, "highestTierName": "x"},
                    }
                ],
            ),
            {"spec.subGroupPolicy[0].networkTopology": "not both"},
        ),
        (
            group().set("spec.networkTopology", {"highestTierName": "t" * 254}),
            {"spec.networkTopology.highestTierName": "at most 253 characters, got 254"},
        ),
        (
            group().set("spec.networkTopology", {"mode": "strict", "highestTierAllowed": 1}),
            {"spec.networkTopology.mode": "Input should be 'hard' or 'soft'"},
        ),
        (
            group().set("spec.networkTopology", {"highestTierAllowed": -1}),
            {"spec.networkTopology.highestTierAllowed": "must be from 0 to 2147483647, got -1"},
        ),
        (
            group().set("spec.subGroupPolicy", [{"name": "p", "networkTopology": {"mode": "x"}}]),
            {"spec.subGroupPolicy[0].networkTopology.mode": "Input should be 'hard' or 'soft'"},
        ),
        (
            group().set(
                "spec.subGroupPolicy",
                [
                    {"name": "a", "networkTopology": {"highestTierAllowed": 1}},
                    {"name": "b", "networkTopology": {"highestTierName": "t" * 254}},
                ],
            ),
            {"spec.subGroupPolicy[1].networkTopology.highestTierName": "at most 253 characters"},
        ),
        (
            group()
            .set("spec.networkTopology", {"highestTierAllowed": 1, "highestTierName": "s"})
            .set(
                "spec.subGroupPolicy",
                [{"name": "p", "networkTopology": {"highestTierAllowed": -2}}],
            ),
            {
                "spec.networkTopology": "not both",
                "spec.subGroupPolicy[0].networkTopology.highestTierAllowed": "got -2",
            },
        ),
    ],
    ids=[
        "queue-missing",
        "queue-closed",
        "queue-closing",
        "min-member-negative",
        "min-member-over-int32",
        "min-member-huge",
        "min-member-string",
        "min-task-member-negative",
        "min-task-member-huge",
        "min-task-member-string",
        "bad-min-resources",
        "negative-min-resources",
        "queue-not-string",
        "annotation-not-string",
        "network-topology-both-tiers",
        "sub-group-both-tiers",
        "tier-name-too-long",
        "network-topology-mode",
        "network-topology-tier-negative",
        "sub-group-mode",
        "sub-group-tier-name-too-long",
        "group-and-sub-group-at-once",
    ],
)
def test_each_rule_names_its_field(
    builder: PodGroupBuilder, expected: dict[str, str], queues: Queues
) -> None:
    found = by_path(check_pod_group(builder.build(), queues))
    assert set(found) == set(expected)
    for path, reason in expected.items():
        assert reason in found[path], found[path]


def test_a_queue_without_state_takes_pod_groups() -> None:
    assert check_pod_group(group().queue("q").build(), Queues(make_queue("q"))) == []


def test_every_problem_is_reported_at_once(queues: Queues) -> None:
    builder = group().queue("closed").min_member(-1).min_task("a", -1).min_task("b", 2**40)
    assert [p.path for p in check_pod_group(builder.build(), queues)] == [
        "spec.minMember",
        "spec.minTaskMember.a",
        "spec.minTaskMember.b",
        "spec.queue",
    ]


@pytest.mark.parametrize("obj", [None, "pg", [1]], ids=["none", "string", "list"])
def test_no_pod_group_object(obj: Any, queues: Queues) -> None:
    assert check_pod_group(obj, queues) == [Problem("", "the request carries no PodGroup object")]


def test_a_task_named_like_a_type_keeps_its_name_in_the_path() -> None:
    """A map key such as `none` is a field of the object, never dropped from the path."""
    body = make_group("g").build()
    body["spec"]["minTaskMember"] = {"none": "x"}
    assert [p.path for p in check_pod_group(body, Queues())] == ["spec.minTaskMember.none"]
