"""tensorflow: TF_CONFIG in every container, the cluster by role and the pod's own task, written
as Volcano writes it (its unit test's strings are checked verbatim)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from extender.api.batch import Job
from extender.jobplugins import JobPlugin, PluginError, make_plugins
from extender.jobplugins.tensorflow import TensorflowPlugin
from tests.unit.jobplugins.pods import MakePod, container, env_of, job_of, task


def tensorflow(*args: str) -> JobPlugin:
    [plugin] = make_plugins({"tensorflow": list(args)})
    return plugin


def tf_config(
    plugin: JobPlugin, job: Job, make_pod: MakePod, task_name: str, index: int
) -> dict[str, Any] | None:
    """TF_CONFIG of the pod's container, parsed (None when not set); the init container and the
    objects are checked untouched on the way, and the edit applied twice."""
    pod, spec = make_pod(job, task_name, index)
    before = copy.deepcopy(pod)
    assert plugin.objects(job) == []
    assert plugin.problems(job) == []
    plugin.mutate_pod(pod, job, spec, index)
    plugin.mutate_pod(pod, job, spec, index)  # twice: nothing repeated
    # init containers are left alone, as in Volcano; no port is opened
    assert pod["spec"]["initContainers"] == before["spec"]["initContainers"]
    [main] = pod["spec"]["containers"]
    assert main.get("ports") == before["spec"]["containers"][0].get("ports")
    value = env_of(main).get("TF_CONFIG")
    return None if value is None else dict(json.loads(value))


# Volcano's unit test (tensorflow_test.go): its job and its expected strings, verbatim.
VOLCANO_CLUSTER = (
    '{"cluster":{"ps":["train-123-ps-0.train-123:5000","train-123-ps-1.train-123:5000"],'
    '"worker":["train-123-worker-0.train-123:5000","train-123-worker-1.train-123:5000"],'
    '"chief":["train-123-chief-0.train-123:5000"]},'
)


@pytest.mark.parametrize(
    ("task_name", "expected"),
    [
        ("ps", VOLCANO_CLUSTER + '"task":{"type":"ps","index":0}}'),
        ("worker", VOLCANO_CLUSTER + '"task":{"type":"worker","index":0}}'),
        ("chief", VOLCANO_CLUSTER + '"task":{"type":"chief","index":0}}'),
    ],
)
def test_the_value_is_volcanos_byte_for_byte(
    make_pod: MakePod, task_name: str, expected: str
) -> None:
    job = job_of("train-123", task("ps", 2), task("worker", 2), task("chief", 1))
    pod, spec = make_pod(job, task_name, 0)
    tensorflow("--port=5000").mutate_pod(pod, job, spec, 0)
    assert pod["spec"]["containers"][0]["env"] == [{"name": "TF_CONFIG", "value": expected}]


def hosts(job: str, name: str, count: int, port: int = 2222) -> list[str]:
    return [f"{job}-{name}-{i}.{job}:{port}" for i in range(count)]


FULL = job_of(
    "tf",
    task("ps", 2),
    task("worker", 3),
    task("chief", 1),
    task("evaluator", 1),
    task("board", 1),
)
FULL_CLUSTER = {
    "ps": hosts("tf", "ps", 2),
    "worker": hosts("tf", "worker", 3),
    "chief": hosts("tf", "chief", 1),
    "evaluator": hosts("tf", "evaluator", 1),  # in the cluster, as Volcano has it
}


@pytest.mark.parametrize(
    ("task_name", "index", "task_type"),
    [
        ("ps", 1, "ps"),
        ("worker", 0, "worker"),
        ("worker", 2, "worker"),
        ("chief", 0, "chief"),
        ("evaluator", 0, "evaluator"),
        ("board", 0, "board"),  # a task playing no role: its name as type, outside the cluster
    ],
)
def test_every_role_with_the_defaults(
    make_pod: MakePod, task_name: str, index: int, task_type: str
) -> None:
    assert tf_config(tensorflow(), FULL, make_pod, task_name, index) == {
        "cluster": FULL_CLUSTER,
        "task": {"type": task_type, "index": index},
    }


def test_the_example_job_in_its_tensorflow_form(tf_job: Job, make_pod: MakePod) -> None:
    """examples/tf-dist-mnist.yaml (ps 1, worker 2) with Volcano's e2e arguments."""
    plugin = tensorflow("--ps=ps", "--worker=worker", "--port=2222")
    job = "tensorflow-benchmark"
    assert tf_config(plugin, tf_job, make_pod, "worker", 1) == {
        "cluster": {"ps": hosts(job, "ps", 1), "worker": hosts(job, "worker", 2)},
        "task": {"type": "worker", "index": 1},
    }
    pod, spec = make_pod(tf_job, "ps", 0)
    plugin.mutate_pod(pod, tf_job, spec, 0)
    [main] = pod["spec"]["containers"]
    # the template's own port stays as it was
    assert main["ports"] == [{"containerPort": 2222, "name": "tfjob-port"}]
    assert json.loads(env_of(main)["TF_CONFIG"])["task"] == {"type": "ps", "index": 0}


def test_arguments_rename_the_roles_and_the_port(make_pod: MakePod) -> None:
    job = job_of("j", task("param", 1), task("replica", 2), task("lead", 1), task("eval", 1))
    plugin = tensorflow(
        "--ps=param", "--worker", "replica", "--chief=lead", "--evaluator=eval", "--port=5000"
    )
    expected_cluster = {
        "ps": hosts("j", "param", 1, 5000),
        "worker": hosts("j", "replica", 2, 5000),
        "chief": hosts("j", "lead", 1, 5000),
        "evaluator": hosts("j", "eval", 1, 5000),
    }
    for name, role in (("param", "ps"), ("replica", "worker"), ("lead", "chief")):
        assert tf_config(plugin, job, make_pod, name, 0) == {
            "cluster": expected_cluster,
            "task": {"type": role, "index": 0},
        }


@pytest.mark.parametrize(
    ("job", "expected_cluster"),
    [
        # a job without the ps task (nor chief, evaluator): those roles are left out
        (job_of("j", task("worker", 2)), {"worker": hosts("j", "worker", 2)}),
        # a role whose task has no replicas is left out (Go's omitempty)
        (
            job_of("j", task("ps", 0), task("worker", 1), task("chief", 1)),
            {"worker": hosts("j", "worker", 1), "chief": hosts("j", "chief", 1)},
        ),
        # no role at all: an empty cluster
        (job_of("j", task("worker", 1), task("trainer", 1)), {"worker": hosts("j", "worker", 1)}),
    ],
)
def test_missing_roles_are_left_out(
    make_pod: MakePod, job: Job, expected_cluster: dict[str, list[str]]
) -> None:
    assert tf_config(tensorflow(), job, make_pod, "worker", 0) == {
        "cluster": expected_cluster,
        "task": {"type": "worker", "index": 0},
    }


def test_a_job_whose_tasks_play_no_role_gets_an_empty_cluster(make_pod: MakePod) -> None:
    job = job_of("j", task("a", 1), task("b", 1))
    assert tf_config(tensorflow(), job, make_pod, "b", 0) == {
        "cluster": {},
        "task": {"type": "b", "index": 0},
    }


@pytest.mark.parametrize(
    "job",
    [job_of("solo", task("worker", 1)), job_of("solo", task("trainer", 1))],
)
def test_a_stand_alone_job_gets_no_tf_config(make_pod: MakePod, job: Job) -> None:
    name = job.spec.tasks[0].name
    assert tf_config(tensorflow(), job, make_pod, name, 0) is None


def test_one_task_of_several_replicas_is_a_cluster(make_pod: MakePod) -> None:
    job = job_of("j", task("worker", 2))
    config = tf_config(tensorflow(), job, make_pod, "worker", 1)
    assert config == {
        "cluster": {"worker": hosts("j", "worker", 2)},
        "task": {"type": "worker", "index": 1},
    }


def test_a_fixed_hostname_is_listed_once_per_replica(make_pod: MakePod) -> None:
    job = job_of(
        "j", task("ps", 2, hostname="param", subdomain="net"), task("worker", 1, subdomain="net")
    )
    assert tf_config(tensorflow(), job, make_pod, "worker", 0) == {
        "cluster": {"ps": ["param.net:2222", "param.net:2222"], "worker": ["j-worker-0.net:2222"]},
        "task": {"type": "worker", "index": 0},
    }


def test_a_template_tf_config_is_replaced_not_repeated(make_pod: MakePod) -> None:
    spec = {"containers": [container("main", env=[{"name": "TF_CONFIG", "value": "{}"}])]}
    job = job_of("j", task("ps", 1, **spec), task("worker", 1))
    pod, ps = make_pod(job, "ps", 0)
    tensorflow().mutate_pod(pod, job, ps, 0)
    [variable] = pod["spec"]["containers"][0]["env"]
    assert json.loads(variable["value"])["task"] == {"type": "ps", "index": 0}


def test_defaults() -> None:
    plugin = tensorflow()
    assert isinstance(plugin, TensorflowPlugin)
    assert plugin.tasks == {
        "ps": "ps",
        "worker": "worker",
        "chief": "chief",
        "evaluator": "evaluator",
    }
    assert plugin.port == 2222


@pytest.mark.parametrize(
    ("args", "argument", "reason"),
    [
        (
            ["--master=m"],
            "master",
            "unknown argument --master (known: --chief, --evaluator, --port, --ps, --worker)",
        ),
        (
            ["--chief=worker"],
            "chief",
            "--ps, --worker, --chief and --evaluator must name four different tasks",
        ),
        (["--port=65536"], "port", "--port must be a whole number in 1..65535, got '65536'"),
        (["--port"], "port", "argument --port needs a value"),
        (["ps"], None, "argument 1 is not --name[=value]"),
    ],
)
def test_bad_arguments_are_refused(args: list[str], argument: str | None, reason: str) -> None:
    with pytest.raises(PluginError) as caught:
        tensorflow(*args)
    assert (caught.value.field, caught.value.argument) == ("spec.plugins.tensorflow", argument)
    assert caught.value.reason == reason


def test_an_empty_role_flag_leaves_the_role_out(make_pod: MakePod) -> None:
    """`--ps=` names no task (as Go's flag reads it in Volcano): the ps task plays no role and
    is left out of the cluster; its own pods take their task name as type."""
    job = job_of("j", task("ps", 1), task("worker", 2))
    plugin = make_plugins({"tensorflow": ["--ps="]})[0]
    assert tf_config(plugin, job, make_pod, "worker", 1) == {
        "cluster": {"worker": hosts("j", "worker", 2)},
        "task": {"type": "worker", "index": 1},
    }
    config = tf_config(plugin, job, make_pod, "ps", 0)
    assert config is not None and config["task"] == {"type": "ps", "index": 0}
