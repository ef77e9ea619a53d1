"""mpi: MPI_HOST (the workers' hosts) on the master's containers and init containers, the ssh port
opened on every container of every pod, and the master task required."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.api.batch import Job
from extender.jobplugins import JobPlugin, PluginError, make_plugins
from extender.jobplugins.mpi import MpiPlugin
from tests.unit.jobplugins.pods import MakePod, all_containers, container, env_of, job_of, task


def mpi(*args: str) -> JobPlugin:
    [plugin] = make_plugins({"mpi": list(args)})
    return plugin


def mutated(
    plugin: JobPlugin, job: Job, make_pod: MakePod, name: str, index: int
) -> dict[str, Any]:
    pod, spec = make_pod(job, name, index)
    assert plugin.objects(job) == []
    plugin.mutate_pod(pod, job, spec, index)
    plugin.mutate_pod(pod, job, spec, index)  # twice: nothing repeated
    return pod


JOB = job_of("mpi", task("master", 1), task("worker", 3), task("board", 1))
WORKERS = "mpi-worker-0.mpi,mpi-worker-1.mpi,mpi-worker-2.mpi"
PORT_22 = [{"name": "mpijob-port", "containerPort": 22}]


@pytest.mark.parametrize(
    ("name", "index", "env"),
    [
        ("master", 0, {"MPI_HOST": WORKERS}),
        ("worker", 0, {}),
        ("worker", 2, {}),
        ("board", 0, {}),  # a side task: the port only
    ],
)
def test_env_and_port_per_task(
    make_pod: MakePod, name: str, index: int, env: dict[str, str]
) -> None:
    pod = mutated(mpi(), JOB, make_pod, name, index)
    assert [c["name"] for c in all_containers(pod)] == ["main", "wait"]
    for c in all_containers(pod):  # init containers too, as in Volcano
        assert env_of(c) == env
        assert c["ports"] == PORT_22


def test_volcanos_cases_the_port_argument(make_pod: MakePod) -> None:
    """mpi_test.go: `--port=5000` opens 5000 instead of 22, with the task names of the job
    given as arguments."""
    job = job_of("test-mpi-1", task("fakeMaster", 1), task("fakeWorker", 2))
    plugin = mpi("--master=fakeMaster", "--worker=fakeWorker", "--port=5000")
    pod = mutated(plugin, job, make_pod, "fakeMaster", 0)
    [main] = pod["spec"]["containers"]
    assert main["ports"] == [{"name": "mpijob-port", "containerPort": 5000}]
    assert env_of(main) == {
        "MPI_HOST": "test-mpi-1-fakeWorker-0.test-mpi-1,test-mpi-1-fakeWorker-1.test-mpi-1"
    }


@pytest.mark.parametrize(
    ("worker", "hosts"),
    [
        (task("worker", 0), ""),  # no replicas: empty, as in Volcano
        (task("worker", 2, subdomain="net"), "j-worker-0.net,j-worker-1.net"),
        (task("worker", 3, hostname="w", subdomain="net"), "w.net"),  # a fixed hostname: one host
    ],
)
def test_mpi_host_follows_the_worker_template(
    make_pod: MakePod, worker: dict[str, Any], hosts: str
) -> None:
    job = job_of("j", task("master", 1), worker)
    pod = mutated(mpi(), job, make_pod, "master", 0)
    for c in all_containers(pod):
        assert env_of(c) == {"MPI_HOST": hosts}


def test_a_job_without_the_worker_task_leaves_the_master_alone(make_pod: MakePod) -> None:
    """As in Volcano: its master pods get neither MPI_HOST nor the port; others get the port."""
    job = job_of("j", task("master", 1), task("board", 1))
    plugin = mpi()
    assert plugin.problems(job) == []
    pod, spec = make_pod(job, "master", 0)
    before = copy.deepcopy(pod)
    plugin.mutate_pod(pod, job, spec, 0)
    assert pod == before
    board = mutated(plugin, job, make_pod, "board", 0)
    assert all(c["ports"] == PORT_22 for c in all_containers(board))


@pytest.mark.parametrize(
    ("args", "job", "master"),
    [
        ([], job_of("j", task("launcher", 1), task("worker", 2)), "master"),
        (["--master=launcher"], job_of("j", task("master", 1), task("worker", 2)), "launcher"),
        ([], job_of("j", task("worker", 2)), "master"),
    ],
)
def test_a_job_without_the_master_task_is_refused(args: list[str], job: Job, master: str) -> None:
    [problem] = mpi(*args).problems(job)
    assert (problem.field, problem.argument) == ("spec.plugins.mpi", "master")
    assert str(problem) == (
        f"spec.plugins.mpi: no task is named {master!r}: the mpi master task (--master) must exist"
    )


def test_a_job_with_the_master_task_passes() -> None:
    assert mpi().problems(JOB) == []
    job = job_of("j", task("launcher", 1), task("hosts", 2))
    assert mpi("--master=launcher", "--worker=hosts").problems(job) == []


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        # the number declared (under any name): kept as it is
        ([{"name": "ssh", "containerPort": 22}], [{"name": "ssh", "containerPort": 22}]),
        # the name taken by another number: the new port goes unnamed
        (
            [{"name": "mpijob-port", "containerPort": 2222}],
            [{"name": "mpijob-port", "containerPort": 2222}, {"containerPort": 22}],
        ),
    ],
)
def test_a_declared_port_is_kept(
    make_pod: MakePod, ports: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    job = job_of(
        "j", task("master", 1, containers=[container("main", ports=ports)]), task("worker", 1)
    )
    pod = mutated(mpi(), job, make_pod, "master", 0)
    assert pod["spec"]["containers"][0]["ports"] == expected
    assert pod["spec"]["initContainers"][0]["ports"] == PORT_22


def test_a_template_mpi_host_is_replaced_not_repeated(make_pod: MakePod) -> None:
    env = [{"name": "MPI_HOST", "value": "stale"}, {"name": "OTHER", "value": "1"}]
    job = job_of("j", task("master", 1, containers=[container("main", env=env)]), task("worker", 1))
    pod = mutated(mpi(), job, make_pod, "master", 0)
    assert env_of(pod["spec"]["containers"][0]) == {"MPI_HOST": "j-worker-0.j", "OTHER": "1"}


def test_defaults() -> None:
    plugin = mpi()
    assert isinstance(plugin, MpiPlugin)
    assert (plugin.master, plugin.worker, plugin.port) == ("master", "worker", 22)


@pytest.mark.parametrize(
    ("args", "argument", "reason"),
    [
        (
            ["--hostfile=/h"],
            "hostfile",
            "unknown argument --hostfile (known: --master, --port, --worker)",
        ),
        (
            ["--master=w", "--worker=w"],
            "master",
            "--master and --worker must name two different tasks",
        ),
        (["--port=0"], "port", "--port must be a whole number in 1..65535, got '0'"),
        (["--port=ssh"], "port", "--port must be a whole number in 1..65535, got 'ssh'"),
    ],
)
def test_bad_arguments_are_refused(args: list[str], argument: str, reason: str) -> None:
    with pytest.raises(PluginError) as caught:
        mpi(*args)
    assert (caught.value.field, caught.value.argument) == ("spec.plugins.mpi", argument)
    assert caught.value.reason == reason
