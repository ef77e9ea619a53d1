"""pytorch: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK in every container; the port opened."""

from __future__ import annotations

from typing import Any

import pytest

from extender.api.batch import Job
from extender.jobplugins import JobPlugin, make_plugins
from tests.unit.jobplugins.pods import MakePod, container, env_of, load_job


def pytorch(*args: str) -> JobPlugin:
    [plugin] = make_plugins({"pytorch": list(args)})
    return plugin


@pytest.mark.parametrize(
    ("task", "index", "rank"),
    [("master", 0, "0"), ("worker", 0, "1"), ("worker", 2, "3"), ("board", 0, None)],
)
def test_env_and_port_per_task(
    pytorch_job: Job, make_pod: MakePod, task: str, index: int, rank: str | None
) -> None:
    pod, spec = make_pod(pytorch_job, task, index)
    plugin = pytorch()
    assert plugin.objects(pytorch_job) == []
    plugin.mutate_pod(pod, pytorch_job, spec, index)
    plugin.mutate_pod(pod, pytorch_job, spec, index)  # twice: nothing repeated
    [main] = pod["spec"]["containers"]
    expected = {
        "MASTER_ADDR": "mnist-master-0.mnist",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "4",  # master and workers; the side task is not in the group
    }
    assert env_of(main) == expected | ({"RANK": rank} if rank else {})
    assert main["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    [wait] = pod["spec"]["initContainers"]
    assert wait == container("wait")  # init containers are left alone, as in Volcano


def test_arguments_rename_the_tasks_and_the_port(make_pod: MakePod) -> None:
    spec = {
        "containers": [container("c", ports=[{"name": "pytorchjob-port", "containerPort": 80}])]
    }
    job = load_job(
        {
            "metadata": {"name": "j"},
            "spec": {
                "tasks": [
                    {
                        "name": "chief",
                        "replicas": 1,
                        "template": {"spec": {**spec, "hostname": "c0", "subdomain": "s"}},
                    },
                    {"name": "replica", "replicas": 2, "template": {"spec": spec}},
                ]
            },
        }
    )
    pod, task = make_pod(job, "replica", 1)
    pytorch("--master=chief", "--worker=replica", "--port=29500").mutate_pod(pod, job, task, 1)
    [c] = pod["spec"]["containers"]
    assert env_of(c) == {
        "MASTER_ADDR": "c0.s",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "3",
        "RANK": "2",
    }
    # the name is taken by another port of the container: the new one goes unnamed
    assert c["ports"] == [
        {"name": "pytorchjob-port", "containerPort": 80},
        {"containerPort": 29500},
    ]


def test_a_declared_port_is_kept(pytorch_job: Job, make_pod: MakePod) -> None:
    pod, task = make_pod(pytorch_job, "master", 0)
    ports: list[dict[str, Any]] = [{"name": "dist", "containerPort": 23456}]
    pod["spec"]["containers"][0]["ports"] = ports
    pytorch().mutate_pod(pod, pytorch_job, task, 0)
    assert pod["spec"]["containers"][0]["ports"] == [{"name": "dist", "containerPort": 23456}]


def test_a_job_without_the_master_task_is_left_alone(pytorch_job: Job, make_pod: MakePod) -> None:
    pod, task = make_pod(pytorch_job, "worker", 0)
    before = repr(pod)
    pytorch("--master=chief").mutate_pod(pod, pytorch_job, task, 0)
    assert repr(pod) == before
