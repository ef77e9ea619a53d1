"""pytorch: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK in every container; the port opened."""

from __future__ import annotations

import shutil
import socket
import subprocess
from typing import Any

import pytest

from extender.api.batch import Job
from extender.jobplugins import JobPlugin, PluginError, make_plugins
from extender.jobplugins.pytorch import PytorchPlugin
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


@pytest.mark.parametrize(
    ("task", "index", "waits"), [("master", 0, False), ("worker", 1, True), ("board", 0, False)]
)
def test_workers_wait_for_the_master_when_asked(
    pytorch_job: Job, make_pod: MakePod, task: str, index: int, waits: bool
) -> None:
    pod, spec = make_pod(pytorch_job, task, index)
    plugin = pytorch("--wait-master-enabled", "--wait-master-timeout=60", "--wait-master-image=bb")
    plugin.mutate_pod(pod, pytorch_job, spec, index)
    plugin.mutate_pod(pod, pytorch_job, spec, index)  # twice: one init container
    names = [c["name"] for c in pod["spec"]["initContainers"]]
    assert names == (["wait", "wait-for-master"] if waits else ["wait"])
    if waits:
        wait = pod["spec"]["initContainers"][1]
        assert wait["image"] == "bb"
        assert wait["command"][:2] == ["sh", "-c"]
        assert "mnist-master-0.mnist 23456" in wait["command"][2]
        assert "TIMEOUT=60" in wait["command"][2]


def test_the_wait_is_off_by_default_and_a_templates_own_is_kept(
    pytorch_job: Job, make_pod: MakePod
) -> None:
    pod, spec = make_pod(pytorch_job, "worker", 0)
    pytorch().mutate_pod(pod, pytorch_job, spec, 0)
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["wait"]
    own = container("wait-for-master")
    pod, spec = make_pod(pytorch_job, "worker", 0)
    pod["spec"]["initContainers"] = [own]
    pytorch("--wait-master-enabled=true").mutate_pod(pod, pytorch_job, spec, 0)
    assert pod["spec"]["initContainers"] == [own]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for /dev/tcp")
@pytest.mark.parametrize("listening", [True, False])
def test_the_wait_script_waits_for_the_port(listening: bool) -> None:
    """The script itself, run by a shell against a port on loopback: it ends 0 once the port
    answers, 1 after the timeout when nothing does."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        if listening:
            server.listen()
        [plugin] = make_plugins({"pytorch": [f"--port={port}", "--wait-master-timeout=1"]})
        assert isinstance(plugin, PytorchPlugin)
        script = plugin.wait_script("127.0.0.1")
        done = subprocess.run(["bash", "-c", script], check=False, capture_output=True, timeout=30)
    assert done.returncode == (0 if listening else 1), done.stdout


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (["--wait-master-timeout=0"], "wait-master-timeout"),
        (["--wait-master-image="], "wait-master-image"),
        (["--wait-master-enabled=maybe"], "wait-master-enabled"),
    ],
)
def test_bad_wait_arguments_are_refused(args: list[str], argument: str) -> None:
    with pytest.raises(PluginError) as caught:
        pytorch(*args)
    assert caught.value.argument == argument
