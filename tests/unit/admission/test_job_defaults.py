"""Job defaults: one `add` per missing field, nothing for a job that has them, and nothing
outside the fields it defaults; applying the patch and asking again gives no patch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.admission.job_defaults import defaulted_spec, job_defaults
from extender.admission.jobs import parse_job
from tests.builders import JobBuilder, make_job
from tests.unit.admission.helpers import apply_patch

EXAMPLE = Path(__file__).parents[3] / "examples" / "tf-dist-mnist.yaml"
SCHEDULER = "lahar"


def complete() -> JobBuilder:
    """A job with every default already given: no patch."""
    return (
        make_job("tf")
        .task("ps", 1, min_available=1, max_retry=3)
        .task("worker", 2, min_available=2, max_retry=1)
        .queue("research")
        .scheduler_name("volcano")
        .max_retry(5)
        .min_available(3)
    )


def add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


def defaults(builder: JobBuilder, scheduler: str = SCHEDULER) -> list[dict[str, Any]]:
    return job_defaults(builder.build(), scheduler)


def test_a_complete_job_gets_no_patch() -> None:
    assert defaults(complete()) == []


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (complete().set("spec.queue", ""), [add("/spec/queue", "default")]),
        (complete().unset("spec.queue"), [add("/spec/queue", "default")]),
        (complete().unset("spec.schedulerName"), [add("/spec/schedulerName", SCHEDULER)]),
        (complete().scheduler_name(""), [add("/spec/schedulerName", SCHEDULER)]),
        (complete().max_retry(0), [add("/spec/maxRetry", 3)]),
        (complete().unset("spec.maxRetry"), [add("/spec/maxRetry", 3)]),
        (complete().set("spec.tasks[1].name", ""), [add("/spec/tasks/1/name", "default1")]),
        (complete().unset("spec.tasks[0].name"), [add("/spec/tasks/0/name", "default0")]),
        (
            complete().unset("spec.tasks[1].minAvailable"),
            [add("/spec/tasks/1/minAvailable", 2)],
        ),
        (
            complete().set("spec.tasks[1].minAvailable", None),
            [add("/spec/tasks/1/minAvailable", 2)],
        ),
        (complete().min_available(0), [add("/spec/minAvailable", 3)]),
        (complete().unset("spec.minAvailable"), [add("/spec/minAvailable", 3)]),
        (
            complete().set("spec.tasks[0].template.spec.hostNetwork", True),
            [add("/spec/tasks/0/template/spec/dnsPolicy", "ClusterFirstWithHostNet")],
        ),
        (
            complete()
            .set("spec.tasks[0].template.spec.hostNetwork", True)
            .set("spec.tasks[0].template.spec.dnsPolicy", ""),
            [add("/spec/tasks/0/template/spec/dnsPolicy", "ClusterFirstWithHostNet")],
        ),
        (complete().set("spec.tasks[1].maxRetry", 0), [add("/spec/tasks/1/maxRetry", 3)]),
        (complete().unset("spec.tasks[0].maxRetry"), [add("/spec/tasks/0/maxRetry", 3)]),
        (complete().plugin("pytorch"), [add("/spec/plugins/svc", [])]),
        (complete().plugin("pytorch").plugin("env"), [add("/spec/plugins/svc", [])]),
        # Volcano's webhook: svc for tensorflow, mpi and ray too, and ssh for mpi
        (complete().plugin("tensorflow"), [add("/spec/plugins/svc", [])]),
        (complete().plugin("mpi"), [add("/spec/plugins/ssh", []), add("/spec/plugins/svc", [])]),
        (
            complete().plugin("mpi").plugin("svc", "--disable-network-policy"),
            [add("/spec/plugins/ssh", [])],
        ),
        (complete().plugin("mpi").plugin("ssh"), [add("/spec/plugins/svc", [])]),
        (complete().plugin("ray"), [add("/spec/plugins/svc", [])]),
        (
            complete().plugin("mpi").plugin("tensorflow").plugin("ray"),
            [add("/spec/plugins/ssh", []), add("/spec/plugins/svc", [])],
        ),
        # hcclrank, env: nothing
        (complete().plugin("hcclrank").plugin("env"), []),
    ],
    ids=[
        "queue-empty",
        "queue-missing",
        "scheduler-missing",
        "scheduler-empty",
        "max-retry-zero",
        "max-retry-missing",
        "task-name-empty",
        "task-name-missing",
        "task-min-available-missing",
        "task-min-available-null",
        "min-available-zero",
        "min-available-missing",
        "host-network",
        "host-network-empty-dns-policy",
        "task-max-retry-zero",
        "task-max-retry-missing",
        "pytorch-svc",
        "pytorch-env-svc",
        "tensorflow-svc",
        "mpi-ssh-svc",
        "mpi-ssh",
        "mpi-svc",
        "ray-svc",
        "frameworks-ssh-svc",
        "hcclrank-env-nothing",
    ],
)
def test_each_default_alone(builder: JobBuilder, expected: list[dict[str, Any]]) -> None:
    assert defaults(builder) == expected


@pytest.mark.parametrize(
    "builder",
    [
        complete().max_retry(-1),  # kept: the validating webhook refuses it
        complete().set("spec.tasks[0].maxRetry", -1),
        complete().set("spec.tasks[0].minAvailable", 0),
        complete().set("spec.tasks[0].template.spec.hostNetwork", False),
        complete()
        .set("spec.tasks[0].template.spec.hostNetwork", True)
        .set("spec.tasks[0].template.spec.dnsPolicy", "Default"),
        complete().plugin("pytorch").plugin("svc", "--disable-network-policy"),
        complete().plugin("pytorch").plugin("svc").plugin("ssh"),
        complete()
        .plugin("mpi", "--port=2222")
        .plugin("svc")
        .plugin("ssh", "--ssh-key-file-path=/k"),
        complete().plugin("tensorflow").plugin("ray").plugin("svc"),
        complete().plugin("env"),
        complete().set("spec.plugins", {}),
        complete().unset("spec.tasks[0].template"),
    ],
    ids=[
        "negative-max-retry",
        "negative-task-max-retry",
        "task-min-available-zero",
        "host-network-false",
        "dns-policy-given",
        "svc-present",
        "pytorch-complete",
        "mpi-complete",
        "tensorflow-ray-complete",
        "env-only",
        "empty-plugins",
        "no-template",
    ],
)
def test_nothing_added_when_present(builder: JobBuilder) -> None:
    assert defaults(builder) == []


def test_job_min_available_sums_the_tasks_min_available() -> None:
    builder = make_job("tf").task("ps", 1).task("worker", 4, min_available=2).task("idle", 0)
    patch = defaults(builder)
    assert add("/spec/minAvailable", 1 + 2 + 0) in patch
    assert add("/spec/tasks/0/minAvailable", 1) in patch
    assert add("/spec/tasks/2/minAvailable", 0) in patch


def test_no_job_min_available_for_a_job_of_no_replicas() -> None:
    patch = defaults(make_job("tf").task("w", 0, min_available=0))
    assert not any(op["path"] == "/spec/minAvailable" for op in patch)


def test_a_bare_job_gets_every_default_in_order() -> None:
    builder = (
        make_job("tf")
        .task("", 2)
        .task("w", 3, min_available=1)
        .plugin("pytorch")
        .set("spec.tasks[0].template.spec.hostNetwork", True)
    )
    assert defaults(builder) == [
        add("/spec/queue", "default"),
        add("/spec/schedulerName", SCHEDULER),
        add("/spec/maxRetry", 3),
        add("/spec/tasks/0/name", "default0"),
        add("/spec/tasks/0/minAvailable", 2),
        add("/spec/tasks/0/maxRetry", 3),
        add("/spec/tasks/0/template/spec/dnsPolicy", "ClusterFirstWithHostNet"),
        add("/spec/tasks/1/maxRetry", 3),
        add("/spec/minAvailable", 3),
        add("/spec/plugins/svc", []),
    ]


def test_no_scheduler_name_configured_leaves_it_alone() -> None:
    assert defaults(complete().unset("spec.schedulerName"), scheduler="") == []


@pytest.mark.parametrize("spec", [None, "x", [1]], ids=["none", "string", "list"])
def test_a_job_without_a_spec_object_gets_nothing(spec: Any) -> None:
    assert job_defaults({"metadata": {"name": "a"}, "spec": spec}, SCHEDULER) == []
    assert job_defaults({}, SCHEDULER) == []


def test_the_tensorflow_example_gets_exactly_its_defaults() -> None:
    body = yaml.safe_load(EXAMPLE.read_text())
    assert job_defaults(body, "volcano") == [
        add("/spec/queue", "default"),
        add("/spec/maxRetry", 3),
        add("/spec/tasks/0/minAvailable", 1),
        add("/spec/tasks/0/maxRetry", 3),
        add("/spec/tasks/1/minAvailable", 2),
        add("/spec/tasks/1/maxRetry", 3),
    ]
    defaulted = apply_patch(body, job_defaults(body, "volcano"))
    assert job_defaults(defaulted, "volcano") == []
    job, problems = parse_job(defaulted)
    assert problems == []
    assert job is not None
    assert (job.spec.queue, job.spec.max_retry, job.spec.min_available) == ("default", 3, 3)


# -- properties ------------------------------------------------------------------------------

DEFAULTED = {
    "/spec/queue",
    "/spec/schedulerName",
    "/spec/maxRetry",
    "/spec/minAvailable",
    "/spec/plugins/svc",
    "/spec/plugins/ssh",
}
TASK_DEFAULTED = {"name", "minAvailable", "maxRetry", "template/spec/dnsPolicy"}


@st.composite
def jobs(draw: st.DrawFn) -> dict[str, Any]:
    """Jobs that parse, with any of the defaulted fields missing, empty, zero or given."""
    builder = make_job("j")
    for index in range(draw(st.integers(0, 4))):
        replicas = draw(st.integers(0, 5))
        min_available = draw(st.none() | st.integers(0, replicas))
        name = draw(st.sampled_from(["", f"t{index}", f"default{index}"]))
        max_retry = draw(st.none() | st.integers(-1, 5))
        builder.task(name, replicas, min_available=min_available, max_retry=max_retry)
        if draw(st.booleans()):
            builder.set(f"spec.tasks[{index}].template.spec.hostNetwork", draw(st.booleans()))
        if draw(st.booleans()):
            dns = draw(st.sampled_from(["", "Default", "ClusterFirst"]))
            builder.set(f"spec.tasks[{index}].template.spec.dnsPolicy", dns)
        if draw(st.booleans()):
            builder.unset(f"spec.tasks[{index}].name")
    for key, values in (
        ("queue", st.sampled_from(["", "default", "research"])),
        ("schedulerName", st.sampled_from(["", "volcano", "lahar"])),
        ("maxRetry", st.integers(-1, 5)),
        ("minAvailable", st.integers(0, 6)),
    ):
        if draw(st.booleans()):
            builder.set(f"spec.{key}", draw(values))
    if draw(st.booleans()):
        names = ["env", "svc", "ssh", "pytorch", "tensorflow", "mpi", "ray", "hcclrank"]
        builder.set("spec.plugins", {})
        for name in draw(st.lists(st.sampled_from(names), unique=True)):
            builder.plugin(name)
    return builder.build()


def _allowed(path: str) -> bool:
    if path in DEFAULTED:
        return True
    head, _, rest = path.removeprefix("/spec/tasks/").partition("/")
    return path.startswith("/spec/tasks/") and head.isdigit() and rest in TASK_DEFAULTED


@settings(max_examples=200, deadline=None)
@given(jobs(), st.sampled_from(["", "volcano", "lahar"]))
def test_defaults_are_idempotent_adds_of_defaulted_fields(
    body: dict[str, Any], scheduler: str
) -> None:
    assert parse_job(body)[1] == []
    patch = job_defaults(body, scheduler)
    for op in patch:
        assert op["op"] == "add"
        assert op["path"].startswith("/spec/")
        assert _allowed(op["path"]), op
    assert len({op["path"] for op in patch}) == len(patch)
    defaulted = apply_patch(body, patch)
    assert job_defaults(defaulted, scheduler) == []
    # Only the defaulted fields changed: taking them out of both leaves the same object.
    assert _without_defaulted(defaulted) == _without_defaulted(body)
    # The result still parses, and the defaults took.
    job, problems = parse_job(defaulted)
    assert problems == []
    assert job is not None
    assert job.spec.queue
    assert job.spec.max_retry != 0
    assert all(task.name and task.min_available is not None for task in job.spec.tasks)
    assert all(task.max_retry != 0 for task in job.spec.tasks)


def _without_defaulted(body: dict[str, Any]) -> dict[str, Any]:
    stripped = apply_patch(body, [])
    spec = stripped["spec"]
    for key in ("queue", "schedulerName", "maxRetry", "minAvailable"):
        spec.pop(key, None)
    for plugin in ("svc", "ssh"):
        spec.get("plugins", {}).pop(plugin, None)
    for task in spec["tasks"]:
        task.pop("name", None)
        task.pop("minAvailable", None)
        task.pop("maxRetry", None)
        task["template"]["spec"].pop("dnsPolicy", None)
    return stripped


def test_numbers_beyond_int32_get_no_derived_default() -> None:
    # Eleven tasks of 4,300 nines once summed to a number JSON could not even encode.
    builder = (
        make_job("big")
        .task("a", 10**4000, max_retry=3)
        .task("b", 10**4000, max_retry=3)
        .queue("q")
        .max_retry(3)
    )
    assert defaults(builder, scheduler="") == []


def test_defaults_copy_only_their_path_so_deep_objects_are_never_walked() -> None:
    deep: Any = {}
    for _ in range(5_000):
        deep = {"x": deep}
    job = make_job("deep").task("", 1).build()
    job["spec"]["tasks"][0]["template"]["spec"]["extra"] = deep
    spec = defaulted_spec(job, SCHEDULER)
    assert spec["tasks"][0]["name"] == "default0"
    assert spec["tasks"][0]["template"]["spec"]["extra"] is deep  # shared, not copied
    assert "name" not in job["spec"]["tasks"][0] or job["spec"]["tasks"][0]["name"] == ""
