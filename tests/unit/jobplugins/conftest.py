"""Jobs and pod bodies for the job plugin tests: the TensorFlow example of the repo (1 `ps`, 2
`worker`) and a PyTorch job (1 `master`, 3 `worker`, and 1 of a side task `board`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.api.batch import Job, TaskSpec, pod_name
from tests.unit.jobplugins.pods import MakePod, container, load_job

EXAMPLE = Path(__file__).parents[3] / "examples" / "tf-dist-mnist.yaml"


@pytest.fixture
def tf_job() -> Job:
    return load_job(yaml.safe_load(EXAMPLE.read_text()))


@pytest.fixture
def pytorch_job() -> Job:
    def task(name: str, replicas: int) -> dict[str, Any]:
        spec = {"containers": [container("pytorch")], "initContainers": [container("wait")]}
        return {"name": name, "replicas": replicas, "template": {"spec": spec}}

    return load_job(
        {
            "metadata": {"name": "mnist"},
            "spec": {
                "plugins": {"pytorch": [], "svc": []},
                "tasks": [task("master", 1), task("worker", 3), task("board", 1)],
            },
        }
    )


@pytest.fixture
def make_pod() -> MakePod:
    """The body the controller hands to plugins: the task's template, named; an init container
    is added when the template has none, so every plugin's reach into init containers shows."""

    def make(job: Job, task_name: str, index: int) -> tuple[dict[str, Any], TaskSpec]:
        task = job.task(task_name)
        assert task is not None
        pod = copy.deepcopy(task.template)
        pod.setdefault("metadata", {})["name"] = pod_name(job.metadata.name, task.name, index)
        pod["spec"].setdefault("initContainers", [container("init")])
        return pod, task

    return make
