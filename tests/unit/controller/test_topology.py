"""Volcano's topology fields in what the controller makes: the job's networkTopology and its tasks'
partition policies copied into the PodGroup as Volcano's controller copies them, each pod labelled
with its partition, and a Warning Event on the Job, once, for each field Lahar does not act on."""

from __future__ import annotations

from typing import Any

import pytest

from extender.admission.unhonoured import NUMA
from extender.api.batch import PARTITION_KEY, Job
from extender.api.job_groups import build_pod_group
from extender.api.scheduling import PodGroupSpec
from extender.controller import writer as writer_module
from extender.controller.job_objects import build_pod
from extender.controller.lifecycle import Plan
from extender.controller.reconcile import _differs
from extender.controller.writer import JobWriter, Writes
from tests.builders import JobBuilder, make_job


def partitioned(**policy: Any) -> JobBuilder:
    """A job whose task `w` (8 replicas) is in partitions of 4, and a task `ps` without."""
    partitions = {"totalPartitions": 2, "partitionSize": 4, **policy}
    return (
        make_job("llm")
        .task("ps", 1)
        .task("w", 8)
        .set("spec.tasks[1].partitionPolicy", partitions)
        .min_available(9)
    )


def test_the_pod_group_carries_the_jobs_network_topology() -> None:
    job = partitioned().set("spec.networkTopology", {"mode": "soft", "highestTierAllowed": 2})

    spec = build_pod_group(job.model())["spec"]

    assert spec["networkTopology"] == {"mode": "soft", "highestTierAllowed": 2}


@pytest.mark.parametrize(
    ("topology", "copied"),
    [
        ({"highestTierName": "rack"}, {"mode": "hard", "highestTierName": "rack"}),
        ({"highestTierAllowed": 1}, {"mode": "hard", "highestTierAllowed": 1}),
        ({"mode": "soft"}, {"mode": "soft"}),
    ],
)
def test_the_job_topology_names_one_tier(topology: dict[str, Any], copied: dict[str, Any]) -> None:
    job = make_job("llm").task("w").set("spec.networkTopology", topology).model()
    assert build_pod_group(job)["spec"]["networkTopology"] == copied


def test_each_partitioned_task_is_a_sub_group_of_the_pod_group() -> None:
    topology = {"mode": "hard", "highestTierAllowed": 1}
    job = partitioned(minPartitions=1, networkTopology=topology).model()

    spec = build_pod_group(job)["spec"]

    assert spec["subGroupPolicy"] == [
        {
            "name": "w",
            "subGroupSize": 4,
            "minSubGroups": 1,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "w"}},
            "matchLabelKeys": [PARTITION_KEY],
            "networkTopology": topology,
        }
    ]
    # minPartitions whole partitions are the task's minimum when it sets no minAvailable.
    assert spec["minTaskMember"] == {"ps": 1, "w": 4}
    assert "networkTopology" not in spec


def test_a_job_without_them_makes_the_pod_group_it_made_before() -> None:
    spec = build_pod_group(make_job("tf").task("ps").task("w", 2).model())["spec"]
    assert set(spec) == {"minMember", "minTaskMember", "queue", "minResources"}


def test_the_pod_group_as_read_back_is_not_taken_for_a_change() -> None:
    """The spec the controller wants against the one the watch shows it: equal, so the
    PodGroup is not applied again at every reconcile."""
    job = partitioned(minPartitions=2, networkTopology={"mode": "soft", "highestTierName": "r"})
    wanted = build_pod_group(job.set("spec.networkTopology", {"highestTierAllowed": 3}).model())
    stored = PodGroupSpec.model_validate(wanted["spec"])

    shown = stored.model_dump(by_alias=True, exclude_none=True)

    assert not _differs(wanted["spec"], shown)
    assert _differs({**wanted["spec"], "subGroupPolicy": []}, shown)


@pytest.mark.parametrize(("index", "partition"), [(0, "0"), (3, "0"), (4, "1"), (7, "1")])
def test_each_pod_is_labelled_with_its_partition(index: int, partition: str) -> None:
    job = partitioned().model()
    task = job.task("w")
    assert task is not None

    pod = build_pod(job, task, index, [])

    assert pod["metadata"]["labels"][PARTITION_KEY] == partition


def test_a_task_without_partitions_has_no_partition_label() -> None:
    job = partitioned().model()
    task = job.task("ps")
    assert task is not None
    assert PARTITION_KEY not in build_pod(job, task, 0, [])["metadata"]["labels"]


def test_each_field_not_honoured_is_a_warning_event_on_the_job_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[tuple[str, str, str, str]] = []

    def record(api: Any, involved: dict[str, Any], kind: str, reason: str, message: str) -> None:
        events.append((involved["name"], kind, reason, message))

    monkeypatch.setattr(writer_module, "record_event", record)
    job: Job = (
        partitioned()
        .set("spec.tasks[0].topologyPolicy", "single-numa-node")
        .set("spec.tasks[1].topologyPolicy", "best-effort")
        .model()
    )
    writer = JobWriter(api=None)  # type: ignore[arg-type]
    warned = [
        f"spec.tasks[0].topologyPolicy is not honoured yet: {NUMA}",
        f"spec.tasks[1].topologyPolicy is not honoured yet: {NUMA}",
    ]

    for _ in range(2):  # a second reconcile (the status write failed): nothing said twice
        writer.write(Writes(job, Plan(job.status), unhonoured=list(warned)))

    assert events == [("llm", "Warning", "FieldNotHonoured", message) for message in warned]
