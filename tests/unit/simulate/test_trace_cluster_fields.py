"""The trace fields a running cluster needs: each one read as written, each one refused with the
field and why, and the simulated objects that carry them; traces written without them read as
before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from extender.api.coscheduling import CoschedulingPodGroup
from extender.api.scheduling import GroupKind, gang_key, task_of
from extender.simulate import world
from extender.simulate.defaults import story_trace
from extender.simulate.trace import Trace, TraceError, job_key, load_trace, parse_trace
from tests.builders import TraceBuilder, make_trace, make_trace_job

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("trace-*.yaml"))
# The fields a running cluster's trace may carry, by their YAML names: a trace without them
# dumps none of them.
NEW_FIELDS = {
    "takenAt",
    "names",
    "labels",
    "taints",
    "unschedulable",
    "guarantee",
    "deserved",
    "state",
    "namespace",
    "priorityClass",
    "gatherTimeout",
    "nodeSelector",
    "tolerations",
    "affinity",
    "pods",
    "runTime",
    "started",
    "occupied",
}
GPU_TAINT = {"key": "gpu", "effect": "NoSchedule"}
REQUIRED_IN = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
            ]
        }
    }
}


def _nodes() -> TraceBuilder:
    return make_trace().nodes(names=["a", "b.example"], labels={"pool": "gpu"}).nodes(2)


def _job(**fields: Any) -> TraceBuilder:
    return _nodes().job(make_trace_job("tf").task("w", 2).set(**fields))


def _task(**fields: Any) -> TraceBuilder:
    return _nodes().job(make_trace_job("tf").task("w", 2, **fields))


def _running(*nodes: str | None, **fields: Any) -> TraceBuilder:
    return _nodes().job(make_trace_job("tf").task("w", len(nodes)).bound(*nodes).set(**fields))


def _keys(document: Any) -> set[str]:
    if isinstance(document, dict):
        return set(document) | {k for value in document.values() for k in _keys(value)}
    if isinstance(document, list):
        return {k for value in document for k in _keys(value)}
    return set()


@pytest.mark.parametrize(
    ("trace", "read"),
    [
        (
            _nodes().set("takenAt", "2026-11-29T10:00:00Z"),
            lambda t: t.taken_at == "2026-11-29T10:00:00Z",
        ),
        (_nodes(), lambda t: t.node_names == ["a", "b.example", "node-0", "node-1"]),
        (_nodes(), lambda t: t.node_count == 4 and t.cores == 16),
        (
            make_trace().nodes(1, taints=[GPU_TAINT], unschedulable=True, pods=8),
            lambda t: (
                (t.nodes[0].taints[0].key, t.nodes[0].unschedulable, t.nodes[0].pods)
                == ("gpu", True, 8)
            ),
        ),
        (
            _nodes().queue("ml", guarantee={"cpu": "2"}, deserved={"cpu": "4"}, priority=3),
            lambda t: t.queues[0].guarantee == {"cpu": "2"} and t.queues[0].priority == 3,
        ),
        (_nodes().queue("ml", state="Closed"), lambda t: t.queues[0].state == "Closed"),
        (_job(name="train.v2"), lambda t: t.jobs[0].key == "train.v2"),
        (_job(namespace="ml"), lambda t: t.jobs[0].key == "ml/tf"),
        (_job(kind="coscheduling"), lambda t: t.jobs[0].group_kind is GroupKind.COSCHEDULING),
        (
            _job(kind="coscheduling", gatherTimeout=30),
            lambda t: t.jobs[0].gather_timeout == 30.0,
        ),
        (_job(priorityClass="high.example"), lambda t: t.jobs[0].priority_class == "high.example"),
        (
            _job(runTime={"low": 30, "high": 90, "source": "history"}),
            lambda t: t.jobs[0].run_time is not None and t.jobs[0].run_time.source == "history",
        ),
        (_task(minAvailable=1), lambda t: t.jobs[0].task_minimums == {"w": 1}),
        (_task(nodeSelector={"pool": "gpu"}), lambda t: t.jobs[0].tasks[0].node_selector),
        (
            _task(tolerations=[{"key": "gpu", "operator": "Exists"}]),
            lambda t: t.jobs[0].tasks[0].tolerations[0]["operator"] == "Exists",
        ),
        (_task(affinity=REQUIRED_IN), lambda t: t.jobs[0].tasks[0].affinity == REQUIRED_IN),
        (_running("a", None), lambda t: t.jobs[0].bound_nodes() == ["a", None]),
        (
            _running("a", None),
            lambda t: [n for _, n in t.jobs[0].pod_names()] == ["tf-w-0", "tf-w-1"],
        ),
        (_running("a", "b.example", started=-60), lambda t: t.jobs[0].started == -60.0),
        (_running("a", "a", started=0), lambda t: t.jobs[0].in_progress),
        (_nodes().occupied("a", cpu="500m", pods=3), lambda t: t.occupied[0].pods == 3),
    ],
)
def test_a_field_is_read_as_written(trace: TraceBuilder, read: Callable[[Trace], Any]) -> None:
    assert read(trace.model())


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        (_nodes().set("takenAt", "2026-11-29 10:00"), "takenAt: '2026-11-29 10:00' is not an RFC"),
        (make_trace().nodes(2, names=["a"]), "nodes.0: give count (nodes <name>-<index>) or names"),
        (make_trace().nodes(), "nodes.0: give count (nodes <name>-<index>) or names (the nodes"),
        (make_trace().nodes(names=["a"], name="x"), "nodes.0: name: the prefix of counted nodes"),
        (make_trace().nodes(names=["a", "a"]), "nodes.0: names: a listed more than once"),
        (make_trace().nodes(names=["A_1"]), "nodes.0.names.0: String should match pattern"),
        (make_trace().nodes(1).nodes(names=["node-0"]), "nodes.1.names.0: node 'node-0' is named"),
        (make_trace().nodes(1, labels={"a b": "x"}), "nodes.0.labels.a b.[key]: 'a b' must be"),
        (make_trace().nodes(1, labels={"pool": "a b"}), "nodes.0.labels.pool: 'a b' must be"),
        (make_trace().nodes(1, taints=[{"key": "k"}]), "nodes.0.taints.0.effect: Field required"),
        (
            make_trace().nodes(1, taints=[{"key": "k", "effect": "Never"}]),
            "nodes.0.taints.0.effect: Input should be 'NoSchedule', 'PreferNoSchedule' or",
        ),
        (make_trace().nodes(1, unschedulable="maybe"), "nodes.0.unschedulable: Input should be"),
        (make_trace().nodes(1, pods=0), "nodes.0.pods: Input should be greater than or equal to 1"),
        (_nodes().queue("ml", guarantee={"cpu": "-1"}), "queues.0.guarantee.cpu: must not be neg"),
        (_nodes().queue("ml", deserved={"cpu": "x"}), "queues.0.deserved.cpu: invalid quantity"),
        (_nodes().queue("ml", priority=-1), "queues.0.priority: Input should be greater than"),
        (
            _nodes().queue("ml", state="Closing"),
            "queues.0.state: Input should be 'Open' or 'Closed'",
        ),
        (_job(name="Train"), "jobs.0.name: String should match pattern"),
        (_job(namespace="m.l"), "jobs.0.namespace: String should match pattern"),
        (_job(kind="kueue"), "jobs.0.kind: Input should be 'volcano', 'coscheduling' or 'native'"),
        (_job(gatherTimeout=30), "jobs.0: gatherTimeout: a volcano PodGroup has no schedule"),
        (_job(kind="coscheduling", gatherTimeout=0), "jobs.0.gatherTimeout: Input should be gr"),
        (_job(priorityClass="High"), "jobs.0.priorityClass: String should match pattern"),
        (
            _job(runTime={"low": -1, "high": 9, "source": "x"}),
            "jobs.0.runTime.low: Input should be greater than or equal to 0",
        ),
        (
            _job(runTime={"low": 90, "high": 30, "source": "x"}),
            "jobs.0.runTime: high: 30 is below low 90",
        ),
        (_job(runTime={"low": 1, "high": 9}), "jobs.0.runTime.source: Field required"),
        (
            _job(runTime={"low": 90, "high": 120, "source": "history"}),
            "jobs.0: tasks.0.duration: 60 is outside runTime [90, 120]",
        ),
        (_task(minAvailable=3), "jobs.0.tasks.0: minAvailable 3 is more than the task's 2"),
        (_task(minAvailable=-1), "jobs.0.tasks.0.minAvailable: Input should be greater than"),
        (
            _job(kind="native").set("jobs[0].tasks[0].minAvailable", 1),
            "jobs.0: tasks.0.minAvailable: a native PodGroup has no per-task minimum",
        ),
        (_task(nodeSelector={"pool": "a b"}), "jobs.0.tasks.0.nodeSelector.pool: 'a b' must be"),
        (
            _task(tolerations=[{"key": "gpu", "operator": "Eq"}]),
            "jobs.0.tasks.0: tolerations.0.operator: must be one of Equal, Exists, got 'Eq'",
        ),
        (
            _task(tolerations=[{"operator": "Exists", "effect": "NoPlace"}]),
            "jobs.0.tasks.0: tolerations.0.effect: must be one of NoSchedule, PreferNoSchedule",
        ),
        (
            _task(tolerations=[{"key": "gpu", "value": 3}]),
            "jobs.0.tasks.0: tolerations.0.value: 3 must be a string",
        ),
        (
            _task(affinity={"podAntiAffinity": {}}),
            "jobs.0.tasks.0: affinity.podAntiAffinity: not modelled",
        ),
        (
            _task(affinity={"nodeAffinity": "x"}),
            "jobs.0.tasks.0: affinity.nodeAffinity: Input should be a valid dictionary",
        ),
        (
            _task(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "pool", "operator": "in", "values": ["a"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            ),
            "nodeSelectorTerms.0.matchExpressions.0.operator: must be one of In, NotIn, Exists",
        ),
        (
            _task(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "In"}]}
                            ]
                        }
                    }
                }
            ),
            "nodeSelectorTerms.0.matchExpressions.0.values: In needs a value",
        ),
        (
            _task(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.uid", "operator": "In", "values": ["a"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            ),
            "nodeSelectorTerms.0.matchFields.0.key: matchFields reads metadata.name only",
        ),
        (
            _task(pods=[{"name": "p0"}]),
            "jobs.0.tasks.0: pods: 1 named for the task's 2 replicas (one per replica)",
        ),
        (_task(pods=[{"name": "P0"}, {"name": "p1"}]), "jobs.0.tasks.0.pods.0.name: String"),
        (
            _task(pods=[{"name": "p0"}, {"name": "p0"}]),
            "jobs.0.tasks.0.pods.1.name: pod 'p0' is a pod of job 'tf' too (jobs.0.tasks.0.pods",
        ),
        (_running("a", "z"), "jobs.0.tasks.0.pods.1.node: 'z' is not a node of the trace"),
        (_running("a", None, arrival=5), "jobs.0: arrival: the job has pods bound at time 0, so"),
        (_running("a", None, started=-60), "jobs.0: started: a started job has at least minAv"),
        (_running("a", "a", started=5), "jobs.0.started: Input should be less than or equal to 0"),
        (_nodes().occupied("z", cpu="1"), "occupied.0.node: 'z' is not a node of the trace"),
        (
            _nodes().occupied("a", cpu="1").occupied("a", cpu="2"),
            "occupied.1.node: 'a' is listed in occupied.0 too",
        ),
        (_nodes().occupied("a", cpu="-1"), "occupied.0.cpu: must not be negative"),
        (_nodes().occupied("a", pods=0), "occupied.0.pods: Input should be greater than or equal"),
    ],
)
def test_a_wrong_field_is_named_with_why(trace: TraceBuilder, message: str) -> None:
    with pytest.raises(TraceError, match=r"^trace: ") as error:
        trace.model()
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        (
            [make_trace_job("a").task("b-c"), make_trace_job("a-b").task("c")],
            "jobs.1.name: job 'a-b' would make pod 'a-b-c-0', which job 'a' makes too",
        ),
        (
            [
                make_trace_job("a").task("w"),
                make_trace_job("b").task("w", pods=[{"name": "a-w-0"}]),
            ],
            "jobs.1.tasks.0.pods.0.name: pod 'a-w-0' is a pod of job 'a' too (named JOB-TASK",
        ),
        (
            [make_trace_job("a").task("w"), make_trace_job("a").task("w")],
            "jobs.1.name: job 'a' is listed twice",
        ),
        (
            [make_trace_job("a").task("w").set(namespace="ml")] * 2,
            "jobs.1.name: job 'a' is listed twice in ml",
        ),
    ],
)
def test_names_are_unique_per_namespace(jobs: list[Any], message: str) -> None:
    trace = make_trace().nodes(1)
    for job in jobs:
        trace.job(job)
    with pytest.raises(TraceError) as error:
        trace.model()
    assert message in str(error.value)


def test_one_name_in_two_namespaces_is_two_jobs() -> None:
    trace = (
        make_trace()
        .nodes(1)
        .job(make_trace_job("a").task("w"))
        .job(make_trace_job("a").task("w").set(namespace="ml"))
        .model()
    )
    assert [job.key for job in trace.jobs] == ["a", "ml/a"]


def test_added_nodes_are_named_apart_from_named_nodes() -> None:
    trace = (
        make_trace()
        .nodes(names=["scaled-3"])
        .set(
            "autoscaling",
            {"nodes": {"cpu": "4", "memory": "8Gi"}, "maxNodes": 2, "provisioningDelay": 0},
        )
    )
    with pytest.raises(TraceError, match=r"autoscaling.name: the nodes added are named scaled-<n"):
        trace.model()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_a_trace_without_them_reads_and_dumps_as_before(path: Path) -> None:
    trace = load_trace(path)
    dumped = trace.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    assert not _keys(dumped) & NEW_FIELDS
    assert parse_trace(dumped) == trace
    assert all(not job.in_progress and job.key == job.name for job in trace.jobs)


def test_a_trace_with_them_dumps_and_reads_back_the_same() -> None:
    trace = (
        _running("a", "b.example", started=-60, namespace="ml", kind="coscheduling")
        .queue("ml", guarantee={"cpu": "1"}, state="Closed")
        .occupied("a", cpu="1", pods=2)
        .set("takenAt", "2026-11-29T10:00:00Z")
        .model()
    )
    dumped = trace.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    assert parse_trace(dumped) == trace


# -- the simulated objects ---------------------------------------------------------------------


def test_nodes_carry_labels_taints_cordon_and_pods() -> None:
    trace = (
        make_trace()
        .nodes(names=["g1"], labels={"pool": "gpu"}, taints=[GPU_TAINT], unschedulable=True, pods=8)
        .nodes(1)
        .model()
    )
    tainted, plain = world.nodes(trace)
    assert tainted.metadata.labels == {"kubernetes.io/hostname": "g1", "pool": "gpu"}
    assert [(t.key, t.effect) for t in tainted.spec.taints] == [("gpu", "NoSchedule")]
    assert tainted.spec.unschedulable and tainted.status.allocatable["pods"] == 8
    assert plain.metadata.labels == {"kubernetes.io/hostname": "node-0"}
    assert not plain.spec.taints and not plain.spec.unschedulable
    assert plain.status.allocatable["pods"] == world.PODS_PER_NODE


def test_queues_carry_volcanos_fields() -> None:
    trace = (
        _nodes()
        .queue("ml", guarantee={"cpu": "2"}, deserved={"cpu": "4"}, priority=3, state="Closed")
        .model()
    )
    queue = next(q for q in world.queues(trace) if q.metadata.name == "ml")
    assert queue.spec.guarantee.resource["cpu"] == 2000
    assert queue.spec.deserved["cpu"] == 4000
    assert queue.spec.priority == 3
    assert not queue.open
    default = next(q for q in world.queues(trace) if q.metadata.name == "default")
    assert default.open


@pytest.mark.parametrize(
    ("fields", "kind", "key"),
    [
        ({}, GroupKind.VOLCANO, "sim/tf"),
        ({"namespace": "ml"}, GroupKind.VOLCANO, "ml/tf"),
        ({"kind": "coscheduling"}, GroupKind.COSCHEDULING, "sim/podgroups.scheduling.x-k8s.io/tf"),
        (
            {"kind": "native", "namespace": "ml"},
            GroupKind.NATIVE,
            "ml/podgroups.scheduling.k8s.io/tf",
        ),
    ],
)
def test_a_job_is_a_pod_group_of_its_kind_its_pods_join_it(
    fields: dict[str, Any], kind: GroupKind, key: str
) -> None:
    job = _job(queue="default", minAvailable=1, **fields).model().jobs[0]
    group = world.pod_group(job)
    assert (group.group_kind, group.key, job.gang_key) == (kind, key, key)
    assert group.queue == "default" and group.spec.min_member == 1
    assert job_key(key) == job.key
    pods = world.pods(job)
    assert [gang_key(pod) for pod in pods] == [key, key]
    assert [task_of(pod) for pod in pods] == ["w", "w"]
    assert {pod.metadata.namespace for pod in pods} == {job.namespace}


def test_a_coscheduling_group_waits_its_gather_timeout_in_its_queue() -> None:
    trace = _job(kind="coscheduling", gatherTimeout=45, queue="ml", preemptable=False)
    job = trace.queue("ml").model().jobs[0]
    group = world.pod_group(job)
    made = CoschedulingPodGroup.model_validate(
        {"metadata": {"name": "tf", "namespace": "sim"}, "spec": {"minMember": 2}}
    ).as_gang()
    assert group.gather_timeout == 45.0 and made.gather_timeout is None
    assert group.queue == "ml"
    assert group.metadata.annotations["volcano.sh/preemptable"] == "false"


def test_a_native_group_states_the_jobs_priority() -> None:
    job = _job(kind="native", priority=7).model().jobs[0]
    group = world.pod_group(job)
    assert group.own_priority == 7
    assert group.spec.priority_class_name == world.priority_class_name(7)
    assert all(pod.spec.priority == 7 for pod in world.pods(job))


def test_per_task_minimums_are_volcanos_min_task_member() -> None:
    trace = _nodes().job(
        make_trace_job("tf").task("ps", 1, minAvailable=1).task("w", 4, minAvailable=2)
    )
    job = trace.model().jobs[0]
    assert world.pod_group(job).spec.min_task_member == {"ps": 1, "w": 2}
    assert world.pod_group(_job().model().jobs[0]).spec.min_task_member == {}


def test_pods_carry_their_names_and_their_tasks_constraints() -> None:
    pods = [{"name": "tf-chief"}, {"name": "tf-helper"}]
    tolerations = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    task = {"nodeSelector": {"pool": "gpu"}, "tolerations": tolerations, "affinity": REQUIRED_IN}
    job = _task(pods=pods, **task).model().jobs[0]
    made = world.pods(job)
    assert [pod.metadata.name for pod in made] == ["tf-chief", "tf-helper"]
    pod = made[0]
    assert pod.spec.node_selector == {"pool": "gpu"}
    assert [(t.key, t.operator) for t in pod.spec.tolerations] == [("gpu", "Exists")]
    assert pod.may_run_on({"pool": "gpu"}, (), "a")
    assert not pod.may_run_on({"pool": "cpu"}, (), "node-0")
    plain = world.pods(_job().model().jobs[0])[0]
    assert plain.runs_anywhere and not plain.spec.tolerations


def test_occupied_capacity_is_one_pod_of_another_scheduler_in_no_group() -> None:
    trace = _nodes().occupied("a", cpu="1500m", memory="2Gi", pods=3).model()
    pod = world.occupied(trace.occupied[0])
    assert pod.spec.node_name == "a" and pod.spec.scheduler_name == world.OTHER_SCHEDULER
    assert gang_key(pod) is None
    assert (pod.request["cpu"], pod.request["pods"]) == (1500, 3)
    assert world.occupied(_nodes().occupied("a").model().occupied[0]).request["pods"] == 1


def test_the_story_is_unchanged() -> None:
    trace = story_trace()
    assert [job.key for job in trace.jobs] == ["tf-a", "tf-b"]
    assert [pod.metadata.uid for pod in world.pods(trace.jobs[0])][:2] == [
        "tf-a-ps-0.0",
        "tf-a-worker-0.0",
    ]
