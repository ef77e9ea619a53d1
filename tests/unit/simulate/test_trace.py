"""Trace files: valid ones load; a broken one names the field and why. A job joins a trace
(`Trace.with_job`) by the rules the trace holds its own jobs to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.framework.engine import QueueTree
from extender.simulate import world
from extender.simulate.trace import JobRefused, TraceError, load_trace, parse_trace
from tests.builders import TraceBuilder, TraceJobBuilder, make_trace, make_trace_job

ML = {"name": "ml", "weight": 3}
C_UNDER_A = {"name": "c", "parent": "a"}


def _trace(**changes: Any) -> dict[str, Any]:
    job = {
        "name": "tf",
        "tasks": [{"name": "worker", "replicas": 2, "cpu": "1", "memory": "1Gi", "duration": 60}],
    }
    document: dict[str, Any] = {
        "nodes": [{"count": 2, "cpu": "8", "memory": "32Gi"}],
        "jobs": [job],
    }
    for path, value in changes.items():
        target: Any = document
        *parents, last = path.split("__")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value
    return document


def test_a_job_needs_every_replica_unless_it_says_otherwise() -> None:
    trace = parse_trace(_trace())
    assert trace.jobs[0].minimum == 2
    assert parse_trace(_trace(jobs__0__minAvailable=1)).jobs[0].minimum == 1
    assert trace.node_count == 2


def test_queues_form_a_tree_by_parent_and_root_is_the_top_level() -> None:
    queues = [
        ML,
        {"name": "team-a", "weight": 2, "parent": "ml"},
        {"name": "team-b", "parent": "ml"},
        {"name": "web", "parent": "root"},
    ]
    trace = parse_trace(_trace(queues=queues, jobs__0__queue="team-b"))
    assert trace.parents == {"team-a": "ml", "team-b": "ml"}
    assert trace.children == {"ml": ("team-a", "team-b")}
    assert trace.hierarchical
    assert not parse_trace(_trace(queues=[ML, {"name": "web", "parent": "root"}])).hierarchical


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"jobs__0__tasks__0__cpu": "1x"}, "jobs.0.tasks.0.cpu: invalid quantity '1x'"),
        ({"jobs__0__minAvailable": 3}, "minAvailable 3 is more than the job's 2 pods"),
        ({"jobs__0__queue": "research"}, "jobs.0.queue: queue 'research' is not in queues"),
        ({"jobs__0__tasks__0__duration": 0}, "jobs.0.tasks.0.duration"),
        ({"nodes": []}, "nodes: "),
        ({"jobs__0__name": "Not_A_Name"}, "jobs.0.name"),
        ({"kind": "Job"}, "kind: "),
        ({"jobs__0__speed": 3}, "jobs.0.speed: Extra inputs are not permitted"),
        ({"jobs__0__arrival": float("inf")}, "jobs.0.arrival: Input should be a finite number"),
        ({"jobs__0__tasks__0__duration": float("nan")}, "jobs.0.tasks.0.duration: Input should"),
        ({"nodes__0__cpu": "-8"}, "nodes.0.cpu: must not be negative, got '-8'"),
        ({"nodes__0__cpu": "0"}, "nodes.0: cpu: a node needs some cpu, got '0'"),
        ({"queues": [{"name": "q", "capability": {"cpu": "-1"}}]}, "queues.0.capability.cpu: must"),
        ({"jobs__0__tasks": []}, "jobs.0.tasks: needs at least one"),
        (
            {"queues": [{"name": "team-a", "parent": "ml"}]},
            "queues.0.parent: queue 'ml' is not in queues (known: default, team-a)",
        ),
        (
            {"queues": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "c"}, C_UNDER_A]},
            "queues.0.parent: the parents form a loop: a -> b -> c -> a",
        ),
        ({"queues": [{"name": "a", "parent": "a"}]}, "queues.0.parent: the parents form a loop"),
        (
            {"queues": [ML, {"name": "team-a", "parent": "ml"}], "jobs__0__queue": "ml"},
            "jobs.0.queue: queue ml has child queues (team-a): jobs go in leaf queues",
        ),
        (
            {"queues": [{"name": "x", "parent": "default"}]},
            "jobs.0.queue: queue default has child queues (x): jobs go in leaf queues",
        ),
        ({"queues": [{"name": "root"}]}, "queues.0.name: root is the top of the queue tree"),
        ({"queues": [ML, ML]}, "queues.1.name: queue 'ml' is listed twice"),
        ({"queues": [{"name": "a", "parent": "Not_A_Name"}]}, "queues.0.parent: String should"),
        (
            {"priorityClasses": {"high": 1000}, "defaultPriorityClass": "low"},
            "defaultPriorityClass: 'low' is none of priorityClasses (known: high)",
        ),
    ],
)
def test_a_broken_trace_names_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(TraceError, match=r"^trace: ") as error:
        parse_trace(_trace(**changes))
    assert message in str(error.value)


def test_a_bad_task_field_is_one_error_not_also_too_few_tasks() -> None:
    with pytest.raises(TraceError) as error:
        parse_trace(_trace(jobs__0__tasks__0__cpu="1x"))
    assert "at least" not in str(error.value) and str(error.value).count(";") == 0


def test_jobs_whose_pods_would_share_a_name_are_refused() -> None:
    """Job a's task b-c and job a-b's task c both make pod a-b-c-0: Volcano could not create the
    second, and the simulation would lose track of the first."""
    document = _trace()
    task = document["jobs"][0]["tasks"][0]
    document["jobs"] = [
        {"name": "a", "tasks": [{**task, "name": "b-c", "replicas": 1}]},
        {"name": "a-b", "tasks": [{**task, "name": "c", "replicas": 1}]},
    ]
    with pytest.raises(TraceError, match="job 'a-b' would make pod 'a-b-c-0', which job 'a'"):
        parse_trace(document)


def test_files_that_do_not_load_say_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("nodes: [")
    with pytest.raises(TraceError, match=r"broken.yaml: not valid YAML"):
        load_trace(broken)
    with pytest.raises(TraceError, match=r"missing.yaml: cannot read it"):
        load_trace(tmp_path / "missing.yaml")
    listed = tmp_path / "list.json"
    listed.write_text("[]")
    with pytest.raises(TraceError, match=r"must be a mapping"):
        load_trace(listed)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"nodes: []\n# caf\xe9\n")
    with pytest.raises(TraceError, match=r"latin.yaml: not UTF-8 text: invalid continuation"):
        load_trace(latin)


def test_the_simulated_queues_carry_the_tree_the_core_reads() -> None:
    queues = [ML, {"name": "team-a", "parent": "ml"}, {"name": "web", "parent": "root"}]
    made = {q.metadata.name: q for q in world.queues(parse_trace(_trace(queues=queues)))}
    tree = QueueTree.of(made)
    assert tree.path("team-a") == "root/ml/team-a"
    assert tree.parents == {"ml": "root", "team-a": "ml", "web": "root", "default": "root"}
    assert not tree.strays
    assert made["web"].spec.parent == ""


def _held() -> TraceBuilder:
    """Two nodes a and b, switches of one node each, queue ml over team, and job old running
    on a, its pod named busy-0."""
    busy = [{"name": "busy-0", "node": "a"}]
    old = make_trace_job("old").task("w", 1, cpu="1", duration=60, pods=busy)
    return (
        make_trace()
        .nodes(names=["a", "b"], cpu="4")
        .set("topology", {"switchSize": 1})
        .queue("ml")
        .queue("team", parent="ml")
        .job(old.set(started=-10))
    )


def _new(**fields: Any) -> TraceJobBuilder:
    return make_trace_job("new").task("w", 1, cpu="1", duration=60).set(**fields)


@pytest.mark.parametrize(
    ("job", "rule", "message"),
    [
        (_new(), None, None),
        (_new(namespace="ml", name="old"), None, None),  # (another namespace, another job)
        (_new(queue="team", networkTopology={"highestTierName": "switch"}), None, None),
        (_new(name="old"), "name", "jobs.1.name: job 'old' is listed twice"),
        (
            make_trace_job("new").task("w", 1, cpu="1", duration=60, pods=[{"name": "busy-0"}]),
            "pod",
            "jobs.1.tasks.0.pods.0.name: pod 'busy-0' is a pod of job 'old' too "
            "(jobs.0.tasks.0.pods.0.name); a namespace holds one pod of a name",
        ),
        (
            _new(networkTopology={"highestTierName": "rack"}),
            "topology",
            "jobs.1.networkTopology.highestTierName: no HyperNode has tier 'rack' (known: switch)",
        ),
        (_new(queue="nope"), "queue", "jobs.1.queue: queue 'nope' is not in queues"),
        (_new(queue="ml"), "queue", "jobs.1.queue: queue ml has child queues (team)"),
        (
            make_trace_job("new").task("w", 1, cpu="1", duration=60).bound("c"),
            "node",
            "jobs.1.tasks.0.pods.0.node: 'c' is not a node of the trace",
        ),
    ],
)
def test_a_job_joins_a_trace_by_the_rules_the_trace_holds_its_jobs_to(
    job: TraceJobBuilder, rule: str | None, message: str | None
) -> None:
    """`with_job` refuses what the validator refuses of a trace listing the job, in its words."""
    trace, added = _held().model(), job.model()
    whole = _held().job(job)
    if rule is None:
        assert trace.with_job(added) == whole.model()
        assert trace.with_job(added).jobs == (*trace.jobs, added)
        return
    with pytest.raises(JobRefused) as refused:
        trace.with_job(added)
    assert refused.value.refusal.rule == rule
    assert message is not None and str(refused.value).startswith(message)
    with pytest.raises(TraceError) as invalid:
        whole.model()
    assert str(invalid.value) == f"trace: (top level): {refused.value}"


def test_a_job_whose_own_pods_share_a_name_is_refused_as_the_trace_refuses_it() -> None:
    twice = [{"name": "p"}]
    job = (
        make_trace_job("new")
        .task("w", 1, cpu="1", duration=60, pods=twice)
        .task("v", 1, cpu="1", duration=60, pods=twice)
    )
    with pytest.raises(JobRefused) as refused:
        _held().model().with_job(job.model())
    assert (refused.value.refusal.pod, refused.value.refusal.other) == ("p", "new")
    assert str(refused.value).startswith("jobs.1.tasks.1.pods.0.name: pod 'p' is a pod of job")
