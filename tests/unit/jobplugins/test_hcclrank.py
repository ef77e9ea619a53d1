"""hcclrank: the `hccl/rankIndex` annotation, decided as Volcano decides it (an annotation already
there, else a container's RANK, else the rank across the master and worker tasks), with Volcano's
unit test cases."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.api.batch import Job
from extender.controller.job_objects import build_pod
from extender.jobplugins import JobPlugin, PluginError, make_plugins
from extender.jobplugins.hcclrank import HcclRankPlugin
from tests.unit.jobplugins.pods import MakePod, container, job_of, task

KEY = "hccl/rankIndex"


def hcclrank(*args: str) -> JobPlugin:
    [plugin] = make_plugins({"hcclrank": list(args)})
    return plugin


def rank(plugin: JobPlugin, job: Job, make_pod: MakePod, name: str, index: int) -> str | None:
    pod, spec = make_pod(job, name, index)
    before = copy.deepcopy(pod)
    assert plugin.objects(job) == []
    assert plugin.problems(job) == []
    plugin.mutate_pod(pod, job, spec, index)
    plugin.mutate_pod(pod, job, spec, index)  # twice: the same
    assert pod["spec"] == before["spec"]  # no env, no port: the annotation only
    annotations: dict[str, str] = pod["metadata"].get("annotations") or {}
    return annotations.get(KEY)


@pytest.mark.parametrize(
    ("args", "job", "at", "expected"),
    [
        # Volcano's cases (hcclrank_test.go)
        ([], job_of("j", task("master", 3), task("worker", 2)), ("master", 2), "2"),
        ([], job_of("j", task("master", 2), task("worker", 3)), ("worker", 1), "3"),
        (
            ["--master=custom-master", "--worker=custom-worker"],
            job_of("j", task("custom-master", 5), task("custom-worker", 3)),
            ("custom-master", 3),
            "3",
        ),
        (
            ["--master", "custom-master", "--worker", "custom-worker"],
            job_of("j", task("custom-master", 4), task("custom-worker", 3)),
            ("custom-worker", 2),
            "6",
        ),
        ([], job_of("j", task("master", 10), task("worker", 5)), ("master", 5), "5"),
        ([], job_of("j", task("master", 0), task("worker", 2)), ("worker", 0), "0"),
        # the ranks run across the tasks: master 0..n-1, then the workers
        ([], job_of("j", task("master", 1), task("worker", 4)), ("master", 0), "0"),
        ([], job_of("j", task("master", 1), task("worker", 4)), ("worker", 3), "4"),
        # a job without the master task: the workers count from 0
        ([], job_of("j", task("worker", 2)), ("worker", 1), "1"),
        # the task order in the job does not matter
        ([], job_of("j", task("worker", 2), task("master", 2)), ("worker", 0), "2"),
        # a task playing no role: nothing
        (
            [],
            job_of("j", task("master", 1), task("worker", 1), task("board", 1)),
            ("board", 0),
            None,
        ),
        # a job without the named tasks: nothing
        (["--master=chief"], job_of("j", task("launcher", 1)), ("launcher", 0), None),
    ],
)
def test_rank_from_the_tasks(
    make_pod: MakePod, args: list[str], job: Job, at: tuple[str, int], expected: str | None
) -> None:
    assert rank(hcclrank(*args), job, make_pod, *at) == expected


def test_an_annotation_in_the_template_is_kept(make_pod: MakePod) -> None:
    worker = task("worker", 2)
    worker["template"]["metadata"] = {"annotations": {KEY: "7", "other": "x"}}
    job = job_of("j", task("master", 1), worker)
    pod, spec = make_pod(job, "worker", 1)
    hcclrank().mutate_pod(pod, job, spec, 1)
    assert pod["metadata"]["annotations"] == {KEY: "7", "other": "x"}


def env(*variables: dict[str, Any]) -> list[dict[str, Any]]:
    return list(variables)


@pytest.mark.parametrize(
    ("containers", "init", "expected"),
    [
        # a container's RANK wins, on any task (side tasks too)
        ([container("a", env=env({"name": "RANK", "value": "5"}))], [], "5"),
        # the first container that has it
        (
            [
                container("a", env=env({"name": "OTHER", "value": "x"})),
                container("b", env=env({"name": "RANK", "value": "first"})),
                container("c", env=env({"name": "RANK", "value": "second"})),
            ],
            [],
            "first",
        ),
        # init containers are not read: the rank from the tasks (board: none)
        ([container("a")], [container("i", env=env({"name": "RANK", "value": "9"}))], None),
        # an empty RANK, or one read from elsewhere, counts as none
        ([container("a", env=env({"name": "RANK", "value": ""}))], [], None),
        (
            [
                container(
                    "a",
                    env=env({"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}),
                )
            ],
            [],
            None,
        ),
    ],
)
def test_rank_from_a_containers_env(
    make_pod: MakePod,
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]],
    expected: str | None,
) -> None:
    job = job_of(
        "j",
        task("master", 1),
        task("worker", 1),
        task("board", 1, containers=containers, initContainers=init),
    )
    assert rank(hcclrank(), job, make_pod, "board", 0) == expected


@pytest.mark.parametrize("order", [["pytorch", "hcclrank"], ["hcclrank", "pytorch"]])
def test_with_pytorch_the_annotation_is_the_pytorch_rank(order: list[str]) -> None:
    """hcclrank runs after pytorch whatever the map's order, so it reads the RANK pytorch set
    (every master 0, worker i + 1), not its own count (master i, worker masters + i)."""
    job = job_of("j", task("master", 2), task("worker", 3))
    plugins = make_plugins({name: [] for name in order})
    cases = (("master", 0, "0"), ("master", 1, "0"), ("worker", 0, "1"), ("worker", 2, "3"))
    for name, index, expected in cases:
        spec = job.task(name)
        assert spec is not None
        pod = build_pod(job, spec, index, plugins)
        assert pod["metadata"]["annotations"][KEY] == expected


def test_defaults() -> None:
    plugin = hcclrank()
    assert isinstance(plugin, HcclRankPlugin)
    assert (plugin.master, plugin.worker) == ("master", "worker")


@pytest.mark.parametrize(
    ("args", "argument", "reason"),
    [
        (["--port=1"], "port", "unknown argument --port (known: --master, --worker)"),
        (
            ["--master=w", "--worker=w"],
            "master",
            "--master and --worker must name two different tasks",
        ),
        (["--worker"], "worker", "argument --worker needs a value"),
    ],
)
def test_bad_arguments_are_refused(args: list[str], argument: str, reason: str) -> None:
    with pytest.raises(PluginError) as caught:
        hcclrank(*args)
    assert (caught.value.field, caught.value.argument) == ("spec.plugins.hcclrank", argument)
    assert caught.value.reason == reason
