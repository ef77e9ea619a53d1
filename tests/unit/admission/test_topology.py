"""Volcano's rules for the topology fields (a task's partitionPolicy and topologyPolicy, the job's
and each partition's networkTopology), the minAvailable a partition policy derives, and the
warnings for the fields Lahar keeps but does not act on yet."""

from __future__ import annotations

from typing import Any

import pytest

from extender.admission.admit import Settings, validate_pod_group, validate_queue
from extender.admission.job_defaults import job_defaults
from extender.admission.job_update import check_update
from extender.admission.jobs import check_job, parse_job
from extender.admission.unhonoured import NUMA
from tests.batch_builders import make_review
from tests.builders import JobBuilder, make_group, make_job, make_queue
from tests.unit.admission.helpers import apply_patch, by_path, check, cluster_queues, problems_of

CPU = "spec.tasks[0].template.spec.containers[0].resources"


def partitions(total: Any, size: Any, least: Any = None, **more: Any) -> dict[str, Any]:
    policy = {"totalPartitions": total, "partitionSize": size, **more}
    if least is not None:
        policy["minPartitions"] = least
    return policy


def partitioned(replicas: int, policy: dict[str, Any], **task: Any) -> JobBuilder:
    return make_job("llm").task("w", replicas, **task).set("spec.tasks[0].partitionPolicy", policy)


def topology(**fields: Any) -> dict[str, Any]:
    return {"mode": "hard", **fields}


@pytest.mark.parametrize(
    "builder",
    [
        partitioned(8, partitions(2, 4)),
        partitioned(8, partitions(2, 4, 0)),
        partitioned(8, partitions(2, 4, 1), min_available=4),
        partitioned(8, partitions(2, 4, 2), min_available=8),
        partitioned(8, partitions(4, 2, networkTopology=topology(highestTierAllowed=1))),
        partitioned(8, partitions(8, 1), min_available=3),  # minPartitions unset: no link
        make_job("llm").task("w", 2).set("spec.networkTopology", topology(highestTierAllowed=0)),
        make_job("llm").task("w").set("spec.networkTopology", topology(highestTierName="rack")),
        make_job("llm").task("w").set("spec.networkTopology", {"mode": "soft"}),
        make_job("numa").task("w", cpu="2").set("spec.tasks[0].topologyPolicy", "single-numa-node"),
        make_job("numa").task("w", cpu="500m").set("spec.tasks[0].topologyPolicy", "none"),
        make_job("numa")
        .task("w", cpu="500m")
        .unset("spec.tasks[0].template.spec.containers[0].resources.requests")
        .set(f"{CPU}.limits", {"cpu": "4"})
        .set("spec.tasks[0].topologyPolicy", "restricted"),
    ],
    ids=[
        "partitions",
        "min-partitions-zero",
        "min-partitions-match-min-available",
        "all-partitions",
        "partition-topology",
        "min-available-without-min-partitions",
        "tier-zero",
        "tier-name",
        "soft",
        "numa-whole-cpus",
        "numa-none",
        "numa-limits-without-requests",
    ],
)
def test_jobs_that_pass(builder: JobBuilder) -> None:
    assert problems_of(builder) == {}


P = "spec.tasks[0].partitionPolicy"
BOTH = "give highestTierAllowed or highestTierName, not both"


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (
            partitioned(8, partitions(3, 4)),
            {P: "totalPartitions * partitionSize is 3 * 4 = 12, not the task's 8 replicas"},
        ),
        (
            partitioned(8, partitions(0, 4)),
            {f"{P}.totalPartitions": "must be from 1 to 2147483647, got 0"},
        ),
        (
            partitioned(8, partitions(2, -1)),
            {f"{P}.partitionSize": "must be from 1 to 2147483647, got -1"},
        ),
        (
            partitioned(8, partitions(2, 4, -1)),
            {f"{P}.minPartitions": "must be from 0 to 2147483647, got -1"},
        ),
        (
            partitioned(8, partitions(2, 4, 3)),
            {f"{P}.minPartitions": "3 is more than the 2 totalPartitions"},
        ),
        (
            partitioned(8, partitions(2, 4, 1), min_available=6),
            {
                f"{P}.minPartitions": "minPartitions * partitionSize is 1 * 4 = 4, "
                "not the task's minAvailable 6"
            },
        ),
        (
            partitioned(6, partitions(2, 4, 1), min_available=5),
            {
                P: "totalPartitions * partitionSize is 2 * 4 = 8, not the task's 6 replicas",
                f"{P}.minPartitions": "minPartitions * partitionSize is 1 * 4 = 4, "
                "not the task's minAvailable 5",
            },
        ),
        (
            partitioned(
                8,
                partitions(
                    2, 4, networkTopology=topology(highestTierAllowed=2, highestTierName="rack")
                ),
            ),
            {f"{P}.networkTopology": BOTH},
        ),
        (
            make_job("llm")
            .task("w")
            .set("spec.networkTopology", topology(highestTierAllowed=1, highestTierName="spine")),
            {"spec.networkTopology": BOTH},
        ),
        (
            make_job("llm").task("w").set("spec.networkTopology", topology(highestTierAllowed=-1)),
            {"spec.networkTopology.highestTierAllowed": "must be from 0 to 2147483647, got -1"},
        ),
        (
            make_job("llm")
            .task("w")
            .set("spec.networkTopology", topology(highestTierName="t" * 254)),
            {"spec.networkTopology.highestTierName": "must be at most 253 characters, got 254"},
        ),
        (
            make_job("numa")
            .task("w", cpu="1500m")
            .set("spec.tasks[0].topologyPolicy", "restricted"),
            {
                f"{CPU}.requests.cpu": "topologyPolicy restricted needs a whole number of CPUs "
                "(requests, or limits when there are no requests), got '1500m'"
            },
        ),
        (
            make_job("numa")
            .task("w")
            .unset("spec.tasks[0].template.spec.containers[0].resources")
            .container("w", "init", init=True, requests={"cpu": "1"})
            .set("spec.tasks[0].topologyPolicy", "best-effort"),
            {
                f"{CPU}.limits.cpu": "topologyPolicy best-effort needs a whole number of CPUs "
                "(requests, or limits when there are no requests), got none"
            },
        ),
    ],
    ids=[
        "product-not-replicas",
        "no-partitions",
        "negative-size",
        "negative-min-partitions",
        "min-partitions-above-total",
        "min-partitions-not-min-available",
        "both-products-wrong",
        "partition-topology-both-tiers",
        "job-topology-both-tiers",
        "negative-tier",
        "long-tier-name",
        "numa-fractional-cpu",
        "numa-no-cpu",
    ],
)
def test_problems_name_their_field(builder: JobBuilder, expected: dict[str, str]) -> None:
    assert problems_of(builder) == expected


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"partitionSize": 4}, "totalPartitions: Field required"),
        (partitions("2", 4), "totalPartitions: Input should be a valid integer, got '2'"),
    ],
)
def test_a_partition_policy_that_does_not_read(policy: dict[str, Any], message: str) -> None:
    job, problems = parse_job(partitioned(8, policy).build())
    assert job is None
    assert [str(p) for p in problems] == [f"{P}.{message}"]


def test_a_mode_other_than_hard_or_soft_does_not_read() -> None:
    job, problems = parse_job(
        make_job("llm").task("w").set("spec.networkTopology", {"mode": "strict"}).build()
    )
    assert job is None
    assert [p.path for p in problems] == ["spec.networkTopology.mode"]


def test_numa_alignment_is_warned_about_and_network_topology_is_not() -> None:
    """Network topology and partitions are honoured (the scheduler keeps them within HyperNodes):
    only the NUMA policy, which Lahar does not act on, is warned about."""
    builder = (
        partitioned(8, partitions(2, 4, networkTopology=topology(highestTierAllowed=1)))
        .task("ps", 1)
        .set("spec.networkTopology", topology(highestTierName="spine"))
        .set("spec.tasks[1].topologyPolicy", "single-numa-node")
    )

    problems, warnings = check(builder)

    assert problems == []
    assert warnings == [f"spec.tasks[1].topologyPolicy is not honoured yet: {NUMA}"]


def test_a_job_without_them_gets_no_warning() -> None:
    builder = make_job("tf").task("w").set("spec.tasks[0].topologyPolicy", "none")
    assert check(builder) == ([], [])


# -- UPDATE: scaling keeps the partitions whole -----------------------------------------------


def test_scaling_a_partitioned_task_must_keep_its_partitions_whole() -> None:
    old = partitioned(8, partitions(2, 4), min_available=8).min_available(8).build()
    new = partitioned(6, partitions(2, 4), min_available=6).min_available(6)
    job, _ = parse_job(new.build())
    assert job is not None

    problems = check_update(old, new.build(), job)

    assert by_path(problems) == {
        P: "totalPartitions * partitionSize is 2 * 4 = 8, not the task's 6 replicas"
    }


# -- defaults: minAvailable from minPartitions ------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "task_minimum", "job_minimum"),
    [
        (partitions(4, 2, 3), 6, 7),  # three partitions of two, and the other task's one
        (partitions(4, 2, 0), 8, 9),  # minPartitions unset: every replica
        (partitions(4, 2), 8, 9),
    ],
)
def test_min_available_defaults_to_min_partitions_whole_partitions(
    policy: dict[str, Any], task_minimum: int, job_minimum: int
) -> None:
    body = partitioned(8, policy).task("ps", 1).build()

    defaulted = apply_patch(body, job_defaults(body, "lahar"))

    assert defaulted["spec"]["tasks"][0]["minAvailable"] == task_minimum
    assert defaulted["spec"]["minAvailable"] == job_minimum
    job, _ = parse_job(defaulted)
    assert job is not None
    assert check_job(job, cluster_queues(), []) == []  # the defaults satisfy the rules


# -- PodGroups and Queues ---------------------------------------------------------------------


def _run_group(body: dict[str, Any]) -> Any:
    review = make_review(body, "PodGroup")
    return validate_pod_group(review.request(), cluster_queues(), Settings())


def _run_queue(body: dict[str, Any]) -> Any:
    review = make_review(body, "Queue")
    return validate_queue(review.request(), cluster_queues(), Settings())


@pytest.mark.parametrize(
    "group",
    [
        make_group("pg").min_member(2),
        make_group("pg")
        .min_member(4)
        .set("spec.networkTopology", topology(highestTierAllowed=1))
        .set("spec.subGroupPolicy", [{"name": "w", "subGroupSize": 2}]),
        make_group("pg")
        .min_member(4)
        .set("spec.networkTopology", topology(mode="soft", highestTierName="spine")),
    ],
    ids=["plain", "network-topology-and-sub-groups", "soft-by-tier-name"],
)
def test_a_pod_group_is_admitted_without_warnings(group: Any) -> None:
    """Its networkTopology and subGroupPolicy are honoured: nothing to warn of."""
    outcome = _run_group(group.build())
    assert outcome.decision.allowed
    assert outcome.warnings == ()


@pytest.mark.parametrize(
    ("path", "value", "warned"),
    [
        ("spec.parent", "research", None),  # honoured: the scheduler nests queues
        ("spec.parent", "root", None),
        (
            "spec.affinity",
            {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["a"]}},
            "spec.affinity",
        ),
        ("spec.extendClusters", [{"name": "east", "weight": 1}], "spec.extendClusters"),
        ("spec.dequeueStrategy", "fifo", "spec.dequeueStrategy"),
        ("spec.dequeueStrategy", "traverse", None),
    ],
)
def test_queue_fields_lahar_does_not_act_on(path: str, value: Any, warned: str | None) -> None:
    outcome = _run_queue(make_queue("team").set(path, value).build())

    assert outcome.decision.allowed
    assert [w.split(" is not honoured yet: ")[0] for w in outcome.warnings] == (
        [warned] if warned else []
    )
