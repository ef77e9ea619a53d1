"""The objects a Job owns: each task replica's pod and the claims of job volumes."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from extender.api.batch import Job, TaskSpec, VolumeSpec
from extender.controller.job_objects import build_pod, volume_claims
from extender.jobplugins import make_plugins
from tests.builders import JobBuilder, make_job

OWNER = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "tf",
    "uid": "uid-tf",
    "controller": True,
    "blockOwnerDeletion": True,
}


def tf() -> JobBuilder:
    return make_job("tf").task("ps", 1, cpu="1").task("worker", 2, cpu="2").min_available(3)


def with_spec(job: Job, **fields: Any) -> Job:
    return job.model_copy(update={"spec": job.spec.model_copy(update=fields)})


def with_template(job: Job, task: str, **metadata: dict[str, str]) -> Job:
    """The job with task `task`'s template metadata set (labels, annotations)."""

    def edit(spec: TaskSpec) -> TaskSpec:
        template = {**copy.deepcopy(spec.template), "metadata": metadata}
        return spec.model_copy(update={"template": template}) if spec.name == task else spec

    return with_spec(job, tasks=[edit(t) for t in job.spec.tasks])


def pod_of(job: Job, task: str, index: int, plugins: Sequence[str] = ()) -> dict[str, Any]:
    spec = job.task(task)
    assert spec is not None
    return build_pod(job, spec, index, make_plugins({name: [] for name in plugins}))


def test_a_pod_carries_volcanos_names_labels_annotations_and_owner() -> None:
    job = tf().ns("ml").queue("research").status(version=2, retryCount=1).model()
    pod = pod_of(job, "worker", 1)
    meta = pod["metadata"]
    assert (pod["apiVersion"], pod["kind"], meta["name"], meta["namespace"]) == (
        "v1",
        "Pod",
        "tf-worker-1",
        "ml",
    )
    assert meta["labels"] == {
        "volcano.sh/job-name": "tf",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/task-index": "1",
        "volcano.sh/job-namespace": "ml",
        "volcano.sh/queue-name": "research",
    }
    assert meta["annotations"] == {
        "scheduling.k8s.io/group-name": "tf-uid-tf",
        "volcano.sh/job-name": "tf",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/task-index": "1",
        "volcano.sh/queue-name": "research",
        "volcano.sh/job-version": "2",
        "volcano.sh/template-uid": "tf-worker",
        "volcano.sh/job-retry-count": "1",
    }
    assert meta["ownerReferences"] == [OWNER]


def test_the_template_spec_and_metadata_are_kept_and_not_mutated() -> None:
    job = tf().model()
    job = with_template(
        job,
        "worker",
        labels={"app": "tf", "volcano.sh/job-name": "spoofed"},
        annotations={"team": "ml"},
    )
    before = copy.deepcopy(job.spec.tasks[1].template)
    pod = pod_of(job, "worker", 0)
    assert pod["metadata"]["labels"]["app"] == "tf"
    assert pod["metadata"]["labels"]["volcano.sh/job-name"] == "tf"  # Volcano's keys win
    assert pod["metadata"]["annotations"]["team"] == "ml"
    assert pod["spec"]["containers"] == before["spec"]["containers"]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert job.spec.tasks[1].template == before


@pytest.mark.parametrize(
    ("template", "job_value", "expected"),
    [
        ("volcano", "lahar", "volcano"),
        ("", "lahar", "lahar"),
        ("", "", ""),
    ],
    ids=[
        "the template's scheduler is kept",
        "the job's scheduler fills an empty one",
        "neither names one",
    ],
)
def test_scheduler_name_is_filled_only_when_the_template_has_none(
    template: str, job_value: str, expected: str
) -> None:
    job = with_spec(
        make_job("tf").task("ps", 1, scheduler=template).model(), scheduler_name=job_value
    )
    assert pod_of(job, "ps", 0)["spec"]["schedulerName"] == expected


@pytest.mark.parametrize(
    ("template", "expected"),
    [(None, "high"), ("low", "low")],
    ids=["the job's PriorityClass fills a missing one", "the template's is kept"],
)
def test_priority_class_is_filled_only_when_the_template_has_none(
    template: str | None, expected: str
) -> None:
    builder = make_job("tf")
    builder = (
        builder.task("ps", 1, priority_class_name=template) if template else builder.task("ps")
    )
    job = with_spec(builder.model(), priority_class_name="high")
    assert pod_of(job, "ps", 0)["spec"]["priorityClassName"] == expected


def test_job_volumes_are_mounted_in_every_container() -> None:
    body = make_job("tf").task("ps", 1, init_containers=[{"name": "init", "image": "busybox"}])
    volumes = [
        VolumeSpec(mount_path="/data", volume_claim_name="shared"),
        VolumeSpec(mount_path="/scratch", volume_claim={"resources": {}}),
    ]
    pod = pod_of(with_spec(body.model(), volumes=volumes), "ps", 0)
    assert pod["spec"]["volumes"] == [
        {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}},
        {"name": "tf-volume-1", "persistentVolumeClaim": {"claimName": "tf-volume-1"}},
    ]
    mounts = [
        {"name": "shared", "mountPath": "/data"},
        {"name": "tf-volume-1", "mountPath": "/scratch"},
    ]
    for container in [*pod["spec"]["containers"], *pod["spec"]["initContainers"]]:
        assert container["volumeMounts"] == mounts


def test_plugins_edit_the_pod_last() -> None:
    env = pod_of(tf().model(), "worker", 1, ["env"])["spec"]["containers"][0]["env"]
    assert {"name": "VK_TASK_INDEX", "value": "1"} in env


def test_volume_claims_are_made_only_for_described_volumes() -> None:
    volumes = [
        VolumeSpec(mount_path="/data", volume_claim_name="shared", volume_claim={"ignored": 1}),
        VolumeSpec(mount_path="/scratch", volume_claim={"accessModes": ["ReadWriteOnce"]}),
        VolumeSpec(mount_path="/none"),
    ]
    claims = volume_claims(with_spec(tf().ns("ml").model(), volumes=volumes))
    assert claims == [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "tf-volume-1",
                "namespace": "ml",
                "labels": {"volcano.sh/job-name": "tf"},
                "ownerReferences": [OWNER],
            },
            "spec": {"accessModes": ["ReadWriteOnce"]},
        }
    ]
