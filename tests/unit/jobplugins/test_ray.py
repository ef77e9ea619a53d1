"""ray: the head container starts `ray start --head` and opens its three ports, the worker
container joins the head, a Service `<job>-head-svc` reaches the head, and a job the plugin cannot
wire is refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.api.batch import Job
from extender.jobplugins import JobPlugin, PluginError, make_plugins
from extender.jobplugins.ray import RayPlugin
from tests.unit.jobplugins.pods import MakePod, container, job_of, task


def ray(*args: str) -> JobPlugin:
    [plugin] = make_plugins({"ray": list(args)})
    return plugin


HEAD_COMMAND = (
    "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 --dashboard-port=8265 "
    "--ray-client-server-port=10001"
)
HEAD_PORTS = [
    {"name": "gcs", "containerPort": 6379},
    {"name": "dashboard", "containerPort": 8265},
    {"name": "client-server", "containerPort": 10001},
]
# Volcano's example (example/integrations/ray/ray-example.yaml), with a sidecar and a side task
JOB = job_of(
    "ray-cluster-job",
    task("head", 1, containers=[container("head"), container("logs")]),
    task("worker", 2, containers=[container("worker")]),
    task("board", 1),
)


def mutated(
    plugin: JobPlugin, job: Job, make_pod: MakePod, name: str, index: int
) -> dict[str, Any]:
    pod, spec = make_pod(job, name, index)
    plugin.mutate_pod(pod, job, spec, index)
    plugin.mutate_pod(pod, job, spec, index)  # twice: nothing repeated
    return pod


def test_the_head_container_starts_the_head_and_opens_its_ports(make_pod: MakePod) -> None:
    pod, spec = make_pod(JOB, "head", 0)
    before = copy.deepcopy(pod)
    ray().mutate_pod(pod, JOB, spec, 0)
    ray().mutate_pod(pod, JOB, spec, 0)
    head, logs = pod["spec"]["containers"]
    assert head == container("head", command=["sh", "-c", HEAD_COMMAND], ports=HEAD_PORTS)
    assert logs == container("logs")  # another container of the head pod: left alone
    assert pod["spec"]["initContainers"] == before["spec"]["initContainers"]


@pytest.mark.parametrize("index", [0, 1])
def test_the_worker_container_joins_the_head(make_pod: MakePod, index: int) -> None:
    pod = mutated(ray(), JOB, make_pod, "worker", index)
    [worker] = pod["spec"]["containers"]
    address = "ray-cluster-job-head-0.ray-cluster-job:6379"
    assert worker == container(
        "worker", command=["sh", "-c", f"ray start --block --address={address}"]
    )
    assert pod["spec"]["initContainers"] == [container("wait")]


def test_other_tasks_are_left_alone(make_pod: MakePod) -> None:
    pod, spec = make_pod(JOB, "board", 0)
    before = copy.deepcopy(pod)
    ray().mutate_pod(pod, JOB, spec, 0)
    assert pod == before


def test_the_head_service(make_pod: MakePod) -> None:
    [service] = ray().objects(JOB)
    assert (service.api_version, service.kind, service.name, service.replace) == (
        "v1",
        "Service",
        "ray-cluster-job-head-svc",
        True,
    )
    labels = {"volcano.sh/job-name": "ray-cluster-job", "volcano.sh/job-namespace": "ml"}
    assert service.build() == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "ray-cluster-job-head-svc",
            "namespace": "ml",
            "labels": labels,
            "ownerReferences": [JOB.owner_reference()],
        },
        "spec": {
            "selector": {**labels, "volcano.sh/task-spec": "head"},
            "ports": [
                {"name": "gcs", "port": 6379, "targetPort": 6379, "protocol": "TCP"},
                {"name": "dashboard", "port": 8265, "targetPort": 8265, "protocol": "TCP"},
                {"name": "client-server", "port": 10001, "targetPort": 10001, "protocol": "TCP"},
            ],
        },
    }


def test_arguments_rename_tasks_containers_and_ports(make_pod: MakePod) -> None:
    """Volcano's e2e arguments, with every port moved."""
    job = job_of(
        "r",
        task("lead", 1, hostname="h", subdomain="net", containers=[container("ray")]),
        task("member", 1, containers=[container("ray")]),
    )
    plugin = ray(
        "--head=lead",
        "--worker=member",
        "--headContainer=ray",
        "--workerContainer=ray",
        "--port=2345",
        "--dashboardPort",
        "8266",
        "--clientPort=10002",
    )
    assert plugin.problems(job) == []
    [head] = mutated(plugin, job, make_pod, "lead", 0)["spec"]["containers"]
    assert head["command"] == [
        "sh",
        "-c",
        "ray start --head --block --dashboard-host=0.0.0.0 --port=2345 --dashboard-port=8266 "
        "--ray-client-server-port=10002",
    ]
    assert head["ports"] == [
        {"name": "gcs", "containerPort": 2345},
        {"name": "dashboard", "containerPort": 8266},
        {"name": "client-server", "containerPort": 10002},
    ]
    [worker] = mutated(plugin, job, make_pod, "member", 0)["spec"]["containers"]
    # the head's template fixes its hostname and subdomain: the worker uses them
    assert worker["command"] == ["sh", "-c", "ray start --block --address=h.net:2345"]
    [service] = plugin.objects(job)
    body = service.build()
    assert body["spec"]["selector"]["volcano.sh/task-spec"] == "lead"
    assert [p["port"] for p in body["spec"]["ports"]] == [2345, 8266, 10002]


def test_the_template_command_is_replaced_its_args_kept(make_pod: MakePod) -> None:
    head = container("head", command=["/bin/sh"], args=["-c", "sleep 1"])
    job = job_of("r", task("head", 1, containers=[head]))
    [mutated_head] = mutated(ray(), job, make_pod, "head", 0)["spec"]["containers"]
    assert mutated_head["command"] == ["sh", "-c", HEAD_COMMAND]
    assert mutated_head["args"] == ["-c", "sleep 1"]


def test_declared_ports_are_kept(make_pod: MakePod) -> None:
    ports = [{"name": "redis", "containerPort": 6379}, {"name": "dashboard", "containerPort": 80}]
    job = job_of("r", task("head", 1, containers=[container("head", ports=ports)]))
    [head] = mutated(ray(), job, make_pod, "head", 0)["spec"]["containers"]
    assert head["ports"] == [
        {"name": "redis", "containerPort": 6379},  # the number declared: kept
        {"name": "dashboard", "containerPort": 80},
        {"containerPort": 8265},  # the name taken by another number: unnamed
        {"name": "client-server", "containerPort": 10001},
    ]


def test_a_job_without_the_worker_task_is_a_head_only_cluster(make_pod: MakePod) -> None:
    job = job_of("r", task("head", 1, containers=[container("head")]))
    assert ray().problems(job) == []
    [head] = mutated(ray(), job, make_pod, "head", 0)["spec"]["containers"]
    assert head["command"] == ["sh", "-c", HEAD_COMMAND]


@pytest.mark.parametrize(
    ("args", "job", "problems"),
    [
        (
            [],
            job_of("r", task("master", 1), task("worker", 1, containers=[container("worker")])),
            [("head", "no task is named 'head': the ray head task (--head) must exist")],
        ),
        (
            ["--head=lead"],
            job_of("r", task("head", 1, containers=[container("head")])),
            [("head", "no task is named 'lead': the ray head task (--head) must exist")],
        ),
        (
            ["--headContainer=main"],
            job_of("r" * 55, task("head", 1)),
            [
                (
                    None,
                    f"the head Service would be named {'r' * 55}-head-svc, longer than 63 "
                    "characters: shorten the job's name",
                )
            ],
        ),
    ],
)
def test_a_job_the_plugin_cannot_wire_is_refused(
    make_pod: MakePod, args: list[str], job: Job, problems: list[tuple[str | None, str]]
) -> None:
    found = ray(*args).problems(job)
    assert [(p.argument, p.reason) for p in found] == problems
    assert {p.field for p in found} == {"spec.plugins.ray"}


def test_tasks_without_the_named_containers_keep_their_commands(make_pod: MakePod) -> None:
    """As in Volcano: such a job is accepted and its templates start Ray themselves."""
    job = job_of("r", task("head", 1), task("worker", 1))  # both containers named `main`
    assert ray().problems(job) == []
    for name in ("head", "worker"):
        pod, _ = make_pod(job, name, 0)
        assert (
            mutated(ray(), job, make_pod, name, 0)["spec"]["containers"]
            == (pod["spec"]["containers"])
        )


def test_a_job_named_to_the_limit_passes() -> None:
    job = job_of("r" * 54, task("head", 1, containers=[container("head")]))
    assert ray().problems(job) == []


def test_a_job_without_the_head_task_is_left_alone(make_pod: MakePod) -> None:
    job = job_of("r", task("master", 1), task("worker", 1, containers=[container("worker")]))
    pod, spec = make_pod(job, "worker", 0)
    before = copy.deepcopy(pod)
    ray().mutate_pod(pod, job, spec, 0)
    assert pod == before


def test_defaults() -> None:
    plugin = ray()
    assert isinstance(plugin, RayPlugin)
    assert (plugin.head, plugin.worker, plugin.head_container, plugin.worker_container) == (
        "head",
        "worker",
        "head",
        "worker",
    )
    assert (plugin.port, plugin.dashboard_port, plugin.client_port) == (6379, 8265, 10001)


@pytest.mark.parametrize(
    ("args", "argument", "reason"),
    [
        (
            # the name Volcano's user guide gives; its code knows only --clientPort
            ["--clientServerPort=10001"],
            "clientServerPort",
            "unknown argument --clientServerPort (known: --clientPort, --dashboardPort, --head, "
            "--headContainer, --port, --worker, --workerContainer)",
        ),
        (["--head=worker"], "head", "--head and --worker must name two different tasks"),
        (["--headContainer="], "headContainer", "--headContainer must name a container"),
        (["--workerContainer="], "workerContainer", "--workerContainer must name a container"),
        (
            ["--dashboardPort=6379"],
            "dashboardPort",
            "--port, --dashboardPort and --clientPort must be three different ports",
        ),
        (
            ["--dashboardPort=1", "--clientPort=1"],
            "dashboardPort",
            "--port, --dashboardPort and --clientPort must be three different ports",
        ),
        (
            ["--clientPort=70000"],
            "clientPort",
            "--clientPort must be a whole number in 1..65535, got '70000'",
        ),
    ],
)
def test_bad_arguments_are_refused(args: list[str], argument: str, reason: str) -> None:
    with pytest.raises(PluginError) as caught:
        ray(*args)
    assert (caught.value.field, caught.value.argument) == ("spec.plugins.ray", argument)
    assert caught.value.reason == reason
