"""Queue rules: the spec parses, guarantee <= deserved <= capability per resource, a known state;
the default queue and a queue PodGroups still name are never deleted."""

from __future__ import annotations

from typing import Any

import pytest

from extender.admission.problems import Problem
from extender.admission.queues import (
    MAX_WEIGHT,
    check_delete,
    check_queue,
    parse_queue,
    queue_problems,
)
from tests.builders import QueueBuilder, make_queue
from tests.unit.admission.helpers import Queues, by_path

GPU = "nvidia.com/gpu"


def queue() -> QueueBuilder:
    return make_queue("research")


@pytest.mark.parametrize(
    "builder",
    [
        queue(),
        queue().weight(MAX_WEIGHT),
        queue().state("Open"),
        queue().state("Closed"),
        queue().state("Closing"),
        queue().state("Unknown"),
        queue().state(""),
        queue().guarantee(cpu="2").deserved(cpu="4").capability(cpu="8"),
        queue().guarantee(cpu="4").deserved(cpu="4").capability(cpu="4000m"),
        queue()
        .guarantee(cpu="2", memory="1Gi")
        .deserved(cpu="2", memory="1Gi")
        .capability(cpu="2"),
        queue().deserved(memory="8Gi", **{GPU: "2"}).capability(cpu="1"),
        queue().guarantee(**{GPU: "1"}).deserved(cpu="1", **{GPU: "1"}),
        queue().deserved(cpu=4).capability(cpu="4.5"),
        queue().reclaimable(False),
        queue().counts(allocated={"cpu": "2"}, running=3),
    ],
    ids=[
        "plain",
        "max-weight",
        "open",
        "closed",
        "closing",
        "unknown-state",
        "empty-state",
        "ordered",
        "equal",
        "memory-unbounded-by-capability",
        "unbounded-by-capability",
        "gpu-deserved-too",
        "int-quantity",
        "not-reclaimable",
        "with-status",
    ],
)
def test_good_queues(builder: QueueBuilder) -> None:
    assert check_queue(builder.build()) == []


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (
            queue().guarantee(cpu="4").deserved(cpu="2"),
            {"spec.guarantee.resource.cpu": "4 is more than the deserved 2"},
        ),
        (
            queue().deserved(memory="8Gi").capability(memory="4Gi"),
            {"spec.deserved.memory": "8Gi is more than the capability 4Gi"},
        ),
        (
            queue().guarantee(**{GPU: "2"}).capability(**{GPU: "1"}),
            {f"spec.deserved.{GPU}": "required: at least the guarantee 2 (guarantee <= deserved)"},
        ),
        (
            queue().guarantee(cpu="3").deserved(cpu="2").capability(cpu="1"),
            {
                "spec.guarantee.resource.cpu": "3 is more than the deserved 2",
                "spec.deserved.cpu": "2 is more than the capability 1",
            },
        ),
        (
            queue().guarantee(cpu="1", memory="2Gi").deserved(cpu="2", memory="1Gi"),
            {"spec.guarantee.resource.memory": "more than the deserved 1Gi"},
        ),
        (
            queue().deserved(cpu="1001m").capability(cpu="1"),
            {"spec.deserved.cpu": "1001m is more than the capability 1"},
        ),
        (queue().weight(0), {"spec.weight": "greater than or equal to 1, got 0"}),
        (queue().weight(-1), {"spec.weight": "greater than or equal to 1"}),
        (queue().weight(70000), {"spec.weight": "must be at most 65535, got 70000"}),
        (queue().weight(2**40), {"spec.weight": "must be at most 65535"}),
        (queue().set("spec.weight", "3"), {"spec.weight": "valid integer, got '3'"}),
        (queue().set("spec.weight", 1.0), {"spec.weight": "valid integer"}),
        (
            queue().state("Paused"),
            {"status.state": "must be one of Open, Closed, Closing, Unknown, got 'Paused'"},
        ),
        (queue().state("open"), {"status.state": "got 'open'"}),
        (
            queue().capability(cpu="lots"),
            {"spec.capability": "cpu: invalid quantity 'lots'"},
        ),
        (
            queue().deserved(memory="1Gb"),
            {"spec.deserved": "memory: invalid quantity '1Gb'"},
        ),
        (
            queue().guarantee(cpu="-1"),
            {"spec.guarantee.resource": "cpu: must not be negative"},
        ),
        (
            queue().set("spec.capability", ["cpu"]),
            {"spec.capability": "expected a mapping of resource name to quantity"},
        ),
        (queue().set("spec.reclaimable", "yes"), {"spec.reclaimable": "valid boolean"}),
        (queue().set("spec", "open"), {"spec": "valid dictionary"}),
    ],
    ids=[
        "guarantee-over-deserved",
        "deserved-over-capability",
        "guarantee-without-deserved",
        "all-three-inverted",
        "per-resource",
        "millicores",
        "weight-zero",
        "weight-negative",
        "weight-too-big",
        "weight-huge",
        "weight-string",
        "weight-float",
        "bad-state",
        "state-lower-case",
        "bad-capability-quantity",
        "bad-deserved-quantity",
        "negative-guarantee",
        "capability-list",
        "reclaimable-string",
        "spec-string",
    ],
)
def test_each_rule_names_its_field(builder: QueueBuilder, expected: dict[str, str]) -> None:
    found = by_path(check_queue(builder.build()))
    assert set(found) == set(expected)
    for path, reason in expected.items():
        assert reason in found[path], found[path]


def test_every_problem_is_reported_at_once() -> None:
    builder = (
        queue()
        .weight(100_000)
        .state("Paused")
        .guarantee(cpu="4")
        .deserved(cpu="2", memory="2Gi")
        .capability(memory="1Gi")
    )
    assert [p.path for p in check_queue(builder.build())] == [
        "spec.weight",
        "status.state",
        "spec.guarantee.resource.cpu",
        "spec.deserved.memory",
    ]


@pytest.mark.parametrize("obj", [None, "queue", ["q"]], ids=["none", "string", "list"])
def test_no_queue_object(obj: Any) -> None:
    assert check_queue(obj) == [Problem("", "the request carries no Queue object")]
    assert parse_queue(obj)[0] is None


def test_parse_queue_ignores_what_it_does_not_read() -> None:
    body = queue().weight(3).build() | {"apiVersion": 5, "kind": [], "extra": {}}
    parsed, problems = parse_queue(body)
    assert problems == []
    assert parsed is not None
    assert parsed.spec.weight == 3


@pytest.mark.parametrize(
    ("name", "state", "reason"),
    [
        ("missing", None, "queue 'missing' does not exist"),
        ("closed", "Closed", "queue 'closed' is Closed: it takes no new work"),
        ("closing", "Closing", "queue 'closing' is Closing: it takes no new work"),
    ],
    ids=["missing", "closed", "closing"],
)
def test_queues_that_take_no_work(name: str, state: str | None, reason: str) -> None:
    found = None if state is None else make_queue(name).state(state).model()
    assert queue_problems(name, found) == [Problem("", reason)]


@pytest.mark.parametrize("state", ["Open", "", "Unknown"], ids=["open", "empty", "unknown"])
def test_queues_that_take_work(state: str) -> None:
    assert queue_problems("q", make_queue("q").state(state).model()) == []


def test_the_default_queue_takes_work_before_it_is_made() -> None:
    """Lahar's scheduler counts `default` as there (and creates it): a job need not wait."""
    assert queue_problems("default", None) == []


def test_queue_problems_clip_the_name() -> None:
    [problem] = queue_problems("q" * 10_000, None)
    assert len(problem.reason) < 100


def test_the_default_queue_cannot_be_deleted() -> None:
    assert check_delete("default", Queues()) == [
        Problem("", "the default queue cannot be deleted: PodGroups with no queue use it")
    ]


@pytest.mark.parametrize(
    ("groups", "listed"),
    [
        (["ml/a"], "1 PodGroup(s) (ml/a)"),
        (["z/b", "a/c", "m/d"], "3 PodGroup(s) (a/c, m/d, z/b)"),
        ([f"ns/g{i}" for i in range(5)], "5 PodGroup(s) (ns/g0, ns/g1, ns/g2, ns/g3, ns/g4)"),
        (
            [f"ns/g{i}" for i in range(12)],
            "12 PodGroup(s) (ns/g0, ns/g1, ns/g10, ns/g11, ns/g2, ...)",
        ),
    ],
    ids=["one", "sorted", "five", "capped"],
)
def test_a_queue_with_pod_groups_cannot_be_deleted(groups: list[str], listed: str) -> None:
    view = Queues(queue()).with_groups("research", *groups)
    assert check_delete("research", view) == [
        Problem(
            "",
            f"queue research still has {listed}: "
            "delete them or move their jobs to another queue first",
        )
    ]


@pytest.mark.parametrize("name", ["research", "gone"], ids=["empty", "unknown"])
def test_an_empty_queue_can_be_deleted(name: str) -> None:
    view = Queues(queue()).with_groups("other", "ns/g")
    assert check_delete(name, view) == []
