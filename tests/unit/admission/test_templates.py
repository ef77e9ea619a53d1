"""Pod template rules: what would otherwise surface only when the controller makes the pods."""

from __future__ import annotations

from typing import Any

import pytest

from extender.admission.problems import Problem
from extender.admission.templates import template_problems
from tests.builders import JobBuilder, make_job
from tests.unit.admission.helpers import by_path

AT = ("spec", "tasks", 0, "template")
SPEC = "spec.tasks[0].template.spec"


def job() -> JobBuilder:
    """A task `w` whose template has one container `main` (image, cpu request)."""
    return make_job("a").task("w")


def check(builder: JobBuilder) -> list[Problem]:
    template: dict[str, Any] = builder.build()["spec"]["tasks"][0]["template"]
    return list(template_problems(template, *AT))


def test_a_good_template_has_no_problem() -> None:
    builder = (
        job()
        .container("w", "side", init=True, requests={"cpu": "100m"}, limits={"cpu": "1"})
        .container("w", "sidecar", ports=[8080, 1, 65535], requests={"memory": 2**20})
        .set("spec.tasks[0].template.spec.restartPolicy", "OnFailure")
    )
    assert check(builder) == []


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (
            job().unset("spec.tasks[0].template.spec"),
            {f"{SPEC}": "required: the pods' spec, with at least one container"},
        ),
        (job().set("spec.tasks[0].template.spec", "pod"), {f"{SPEC}": "required"}),
        (
            job().set("spec.tasks[0].template.spec.containers", []),
            {f"{SPEC}.containers": "required: at least one container"},
        ),
        (
            job().unset("spec.tasks[0].template.spec.containers"),
            {f"{SPEC}.containers": "required: at least one container"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers", {"name": "main"}),
            {f"{SPEC}.containers": "required: at least one container"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].image", ""),
            {f"{SPEC}.containers[0].image": "required: the container image"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].image", "  "),
            {f"{SPEC}.containers[0].image": "required"},
        ),
        (
            job().unset("spec.tasks[0].template.spec.containers[0].image"),
            {f"{SPEC}.containers[0].image": "required"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].image", 5),
            {f"{SPEC}.containers[0].image": "required"},
        ),
        (
            job().unset("spec.tasks[0].template.spec.containers[0].name"),
            {f"{SPEC}.containers[0].name": "required: a DNS label"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].name", "Main"),
            {f"{SPEC}.containers[0].name": "'Main' must be lower case"},
        ),
        (
            job().container("w", "main"),
            {f"{SPEC}.containers[1].name": "'main' is the name of another container"},
        ),
        (
            job().container("w", "main", init=True),
            {f"{SPEC}.containers[0].name": "'main' is the name of another container"},
        ),
        (
            job().container("w", "prep", init=True).container("w", "prep", init=True),
            {f"{SPEC}.initContainers[1].name": "'prep' is the name of another container"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers", ["main"]),
            {f"{SPEC}.containers[0]": "must be an object, got 'main'"},
        ),
        (
            job().set("spec.tasks[0].template.spec.initContainers", {"name": "x"}),
            {f"{SPEC}.initContainers": "must be a list, got an object of 1 field"},
        ),
        (
            job().container("w", "c", requests={"cpu": "lots"}),
            {
                f"{SPEC}.containers[1].resources.requests.cpu": (
                    "must be a quantity such as 500m or 2Gi, got 'lots'"
                )
            },
        ),
        (
            job().container("w", "c", limits={"memory": "1Gb"}),
            {f"{SPEC}.containers[1].resources.limits.memory": "got '1Gb'"},
        ),
        (
            job().container("w", "c", limits={"memory": True}),
            {f"{SPEC}.containers[1].resources.limits.memory": "got True"},
        ),
        (
            job().container("w", "c", requests={"cpu": "2"}, limits={"cpu": "1500m"}),
            {f"{SPEC}.containers[1].resources.requests.cpu": "must be at most the limit '1500m'"},
        ),
        (
            job().container("w", "c", init=True, requests={"memory": "2Gi"}, limits={"memory": 1}),
            {f"{SPEC}.initContainers[0].resources.requests.memory": "at most the limit 1"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].resources", "big"),
            {f"{SPEC}.containers[0].resources": "must be an object, got 'big'"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].resources.limits", ["cpu"]),
            {f"{SPEC}.containers[0].resources.limits": "must be an object, got a list of 1 item"},
        ),
        (
            job().set("spec.tasks[0].template.spec.restartPolicy", "Sometimes"),
            {f"{SPEC}.restartPolicy": "must be one of Always, OnFailure, Never, got 'Sometimes'"},
        ),
        (
            job().container("w", "c", ports=[0]),
            {
                f"{SPEC}.containers[1].ports[0].containerPort": (
                    "must be a port number from 1 to 65535, got 0"
                )
            },
        ),
        (
            job().container("w", "c", ports=[80, 65536]),
            {f"{SPEC}.containers[1].ports[1].containerPort": "got 65536"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].ports", [{"containerPort": "80"}]),
            {f"{SPEC}.containers[0].ports[0].containerPort": "got '80'"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].ports", [{"name": "http"}]),
            {f"{SPEC}.containers[0].ports[0].containerPort": "got None"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].ports", [{"containerPort": True}]),
            {f"{SPEC}.containers[0].ports[0].containerPort": "got True"},
        ),
        (
            job().set("spec.tasks[0].template.spec.containers[0].ports", 80),
            {f"{SPEC}.containers[0].ports": "must be a list, got 80"},
        ),
    ],
    ids=[
        "no-spec",
        "spec-not-object",
        "no-containers",
        "containers-missing",
        "containers-not-list",
        "empty-image",
        "blank-image",
        "missing-image",
        "image-not-string",
        "missing-container-name",
        "container-name-upper",
        "duplicate-container",
        "duplicate-init-and-container",
        "duplicate-init-containers",
        "container-not-object",
        "init-containers-not-list",
        "bad-request-quantity",
        "bad-limit-quantity",
        "bool-quantity",
        "request-over-limit",
        "init-request-over-limit",
        "resources-not-object",
        "limits-not-object",
        "bad-restart-policy",
        "port-zero",
        "port-too-big",
        "port-string",
        "port-missing",
        "port-bool",
        "ports-not-list",
    ],
)
def test_each_rule_names_its_field(builder: JobBuilder, expected: dict[str, str]) -> None:
    found = by_path(check(builder))
    assert set(found) == set(expected)
    for path, reason in expected.items():
        assert reason in found[path], found[path]


def test_every_problem_in_a_template_is_reported() -> None:
    builder = (
        job()
        .set("spec.tasks[0].template.spec.restartPolicy", "Later")
        .container("w", "main", image="")
        .container("w", "x", requests={"cpu": "a"}, ports=[70000])
    )
    assert sorted(p.path for p in check(builder)) == [
        f"{SPEC}.containers[1].image",
        f"{SPEC}.containers[1].name",
        f"{SPEC}.containers[2].ports[0].containerPort",
        f"{SPEC}.containers[2].resources.requests.cpu",
        f"{SPEC}.restartPolicy",
    ]


def test_request_within_limit_and_unlimited_resources_pass() -> None:
    builder = job().container(
        "w", "c", requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "0.5"}
    )
    assert check(builder) == []


def test_a_huge_value_is_quoted_clipped() -> None:
    [problem] = check(job().container("w", "c", requests={"cpu": "9" * 100_000}))
    assert len(problem.reason) < 200
