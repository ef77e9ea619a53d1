"""The PodGroup a Job's controller makes: names, owner, minimums, queue, priority, minResources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.api.batch import Job
from extender.api.job_groups import build_pod_group, min_resources
from extender.api.resources import Resources
from tests.builders import JobBuilder, make_job

EXAMPLE = Path(__file__).parents[3] / "examples" / "tf-dist-mnist.yaml"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def tf() -> JobBuilder:
    return make_job("tf").task("ps", 1, cpu="1").task("worker", 2, cpu="2").min_available(3)


def with_spec(job: Job, **fields: Any) -> Job:
    return job.model_copy(update={"spec": job.spec.model_copy(update=fields)})


def test_the_pod_group_of_the_tensorflow_example() -> None:
    body = yaml.safe_load(EXAMPLE.read_text())
    body["metadata"] |= {
        "namespace": "ml",
        "uid": "u1",
        "annotations": {LAST_APPLIED: "{}", "owner": "ml-team"},
    }
    job = Job.model_validate(body)
    group = build_pod_group(job)
    assert (group["apiVersion"], group["kind"]) == ("scheduling.volcano.sh/v1beta1", "PodGroup")
    meta = group["metadata"]
    assert (meta["name"], meta["namespace"]) == ("tensorflow-benchmark-u1", "ml")
    assert meta["labels"] == {"volcano.sh/job-type": "Tensorflow"}
    assert meta["annotations"] == {"owner": "ml-team"}  # kubectl's last-applied is not copied
    assert meta["ownerReferences"] == [job.owner_reference()]
    spec = group["spec"]
    assert (spec["minMember"], spec["minTaskMember"], spec["queue"]) == (
        3,
        {"ps": 1, "worker": 2},
        "default",
    )
    assert Resources.parse(spec["minResources"]) == Resources.parse({"cpu": "5", "memory": "6Gi"})
    assert "priorityClassName" not in spec


def test_the_pod_group_min_task_member_and_priority_class() -> None:
    job = make_job("tf").task("ps", 2, min_available=1).task("worker", 3).queue("research")
    group = build_pod_group(with_spec(job.model(), priority_class_name="high"))
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 3}
    assert (group["spec"]["queue"], group["spec"]["priorityClassName"]) == ("research", "high")


@pytest.mark.parametrize(
    ("min_available", "cpu"),
    [(3, "5"), (2, "3"), (1, "1"), (9, "5"), (0, None)],
    ids=[
        "the whole gang",
        "ps and one worker, in task order",
        "the first pod only",
        "more than the replicas: every pod",
        "no gang: nothing",
    ],
)
def test_min_resources_are_the_requests_of_the_first_min_available_pods(
    min_available: int, cpu: str | None
) -> None:
    expected = Resources.parse({"cpu": cpu} if cpu else {})
    assert min_resources(tf().min_available(min_available).model()) == expected


def test_min_resources_skip_a_task_scaled_to_zero() -> None:
    job = make_job("tf").task("ps", 0, cpu="1").task("worker", 2, cpu="2").min_available(2)
    assert min_resources(job.model()) == Resources.parse({"cpu": "4"})
