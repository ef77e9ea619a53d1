"""A live cluster's listing read as a trace: nodes grouped by what sets them apart, queues with
every field, one job per gang of each PodGroup kind (running ones where they run, with their run
time and its source; a Job still waiting for admission with the pods its controller will make),
what pods outside gangs hold, what the trace cannot carry named in the limits, HyperNodes as
exact lists; and each snapshot plays in a simulation."""

from __future__ import annotations

from typing import Any

import pytest

from extender.api.run_times import RunHistory
from extender.api.scheduling import GroupKind
from extender.api.times import parse_time, rfc3339
from extender.framework.policy import Policy
from extender.simulate.cluster_gangs import FOREVER, SHORTEST
from extender.simulate.from_cluster import Snapshot, snapshot
from extender.simulate.run import Simulation, SimulationOutcome
from extender.simulate.trace import (
    NodeGroup,
    Occupied,
    RunTime,
    Trace,
    TraceHyperNode,
    TraceJob,
    TraceNetworkTopology,
    TracePod,
    TraceQueue,
    TraceTaint,
)
from tests.builders import (
    HyperNodeBuilder,
    NodeBuilder,
    PodBuilder,
    QueueBuilder,
    RawClusterBuilder,
    make_group,
    make_hyper_node,
    make_job,
    make_node,
    make_pod,
    make_queue,
    make_raw_cluster,
)

TAKEN = "2026-11-29T10:00:00Z"
TAKEN_AT = parse_time(TAKEN) or 0.0
ANNOTATION = "lahar.io/expected-run-time"
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"


def ago(minutes: float) -> str:
    """The RFC 3339 time `minutes` before the snapshot was taken."""
    return rfc3339(TAKEN_AT - minutes * 60)


def take(
    raw: RawClusterBuilder,
    history: RunHistory | None = None,
    default: tuple[float, float] | None = None,
) -> Snapshot:
    return snapshot(raw.build(), TAKEN_AT, history or RunHistory(), default)


def job_of(trace: Trace, name: str) -> TraceJob:
    return next(job for job in trace.jobs if job.name == name)


def play(trace: Trace, policy: Policy, horizon: float = 4 * 3600) -> SimulationOutcome:
    return Simulation(trace, policy, "lahar", horizon=horizon).run()


def two_nodes() -> RawClusterBuilder:
    return make_raw_cluster().nodes(make_node("n0").cpu("4"), make_node("n1").cpu("4"))


def gang(
    name: str, nodes: list[str | None], *, cpu: str = "2", started: str | None = None
) -> list[PodBuilder]:
    """The pods `NAME-0`, `NAME-1`... of Volcano PodGroup `name`, each on its node (None:
    pending), running since `started` when bound."""
    pods = []
    for index, node in enumerate(nodes):
        pod = make_pod(f"{name}-{index}").cpu(cpu).group(name).task("worker")
        if node is not None:
            pod.on(node).started(started or ago(10))
        pods.append(pod)
    return pods


# -- nodes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "groups"),
    [
        ([make_node("a"), make_node("b")], [("a", "b")]),  # (their hostname labels differ)
        ([make_node("b"), make_node("a"), make_node("c")], [("a", "b", "c")]),
        ([make_node("a"), make_node("b").label("pool", "gpu")], [("a",), ("b",)]),
        ([make_node("a").label("pool", "x"), make_node("b").label("pool", "y")], [("a",), ("b",)]),
        ([make_node("a"), make_node("b").taint("gpu")], [("a",), ("b",)]),
        ([make_node("a").taint("gpu"), make_node("b").taint("gpu", "NoExecute")], [("a",), ("b",)]),
        ([make_node("a"), make_node("b").cordoned()], [("a",), ("b",)]),
        ([make_node("a"), make_node("b").cpu("16")], [("a",), ("b",)]),
        ([make_node("a"), make_node("b").memory("64Gi")], [("a",), ("b",)]),
        ([make_node("a"), make_node("b").pods(20)], [("a",), ("b",)]),
        ([make_node("a"), make_node("b").offers("nvidia.com/gpu", "8")], [("a",), ("b",)]),
        (
            [make_node("a"), make_node("b").cordoned(), make_node("c"), make_node("d").cordoned()],
            [("a", "c"), ("b", "d")],
        ),
    ],
)
def test_nodes_are_grouped_by_what_a_scheduler_tells_apart(
    nodes: list[NodeBuilder], groups: list[tuple[str, ...]]
) -> None:
    trace = take(make_raw_cluster().nodes(*nodes)).trace
    assert [group.names for group in trace.nodes] == groups


@pytest.mark.parametrize(
    ("node", "group"),
    [
        (make_node("a"), NodeGroup(names=("a",), cpu="8", memory="32Gi")),
        (
            make_node("a").cpu("3500m").memory("48Gi").pods(20),
            NodeGroup(names=("a",), cpu="3500m", memory="48Gi", pods=20),
        ),
        (
            make_node("a").offers("nvidia.com/gpu", "8").label("pool", "gpu"),
            NodeGroup(names=("a",), cpu="8", memory="32Gi", gpu="8", labels={"pool": "gpu"}),
        ),
        (
            make_node("a").taint("gpu", value="a100").taint("spot", "PreferNoSchedule"),
            NodeGroup(
                names=("a",),
                cpu="8",
                memory="32Gi",
                taints=(
                    TraceTaint(key="gpu", value="a100", effect="NoSchedule"),
                    TraceTaint(key="spot", effect="PreferNoSchedule"),
                ),
            ),
        ),
        (
            make_node("a").cordoned(),
            NodeGroup(names=("a",), cpu="8", memory="32Gi", unschedulable=True),
        ),
    ],
)
def test_a_node_group_carries_what_its_nodes_offer_and_ask(
    node: NodeBuilder, group: NodeGroup
) -> None:
    assert take(make_raw_cluster().nodes(node)).trace.nodes == (group,)


# -- queues ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("listed", "queues"),
    [
        ([make_queue("ml").weight(3)], [TraceQueue(name="ml", weight=3)]),
        (
            [make_queue("ml").capability(cpu="8", memory="16Gi")],
            [TraceQueue(name="ml", capability={"cpu": "8", "memory": "16Gi"})],
        ),
        (
            [make_queue("ml").guarantee(cpu="500m", **{"nvidia.com/gpu": "1"})],
            [TraceQueue(name="ml", guarantee={"cpu": "500m", "nvidia.com/gpu": "1"})],
        ),
        ([make_queue("ml").deserved(cpu="4")], [TraceQueue(name="ml", deserved={"cpu": "4"})]),
        ([make_queue("ml").reclaimable(False)], [TraceQueue(name="ml", reclaimable=False)]),
        ([make_queue("ml").set("spec.priority", 5)], [TraceQueue(name="ml", priority=5)]),
        (
            [make_queue("team-a").parent("ml"), make_queue("ml")],
            [TraceQueue(name="ml"), TraceQueue(name="team-a", parent="ml")],
        ),
        ([make_queue("ml").state("Closed")], [TraceQueue(name="ml", state="Closed")]),
        ([make_queue("ml").state("Closing")], [TraceQueue(name="ml", state="Closed")]),
        ([make_queue("ml").state("Open")], [TraceQueue(name="ml")]),
        ([make_queue("root"), make_queue("default")], [TraceQueue(name="default")]),
        ([make_queue("root").weight(2)], []),
    ],
)
def test_queues_carry_every_field_the_engine_reads_and_root_is_left_out(
    listed: list[QueueBuilder], queues: list[TraceQueue]
) -> None:
    trace = take(make_raw_cluster().nodes(make_node("a")).queues(*listed)).trace
    assert list(trace.queues) == queues


# -- gangs of each kind ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "member", "expected"),
    [
        (
            GroupKind.VOLCANO,
            lambda pod: pod.annotate("scheduling.k8s.io/group-name", "tf"),
            {"kind": "volcano", "gather_timeout": None},
        ),
        (
            GroupKind.COSCHEDULING,
            lambda pod: pod.label(COSCHEDULING_LABEL, "tf"),
            {"kind": "coscheduling", "gather_timeout": 45.0},
        ),
        (
            GroupKind.NATIVE,
            lambda pod: pod.group("tf", GroupKind.NATIVE),
            {"kind": "native", "gather_timeout": None},
        ),
    ],
)
def test_a_pod_group_of_each_kind_is_a_job_with_its_minimum_queue_and_priority(
    lahar: Policy, kind: GroupKind, member: Any, expected: dict[str, Any]
) -> None:
    group = make_group("tf").min_member(2).queue("ml").created(ago(5))
    if kind is GroupKind.COSCHEDULING:
        group.set("spec.scheduleTimeoutSeconds", 45)
    pods = [member(make_pod(f"tf-{i}").cpu("1").priority(100)) for i in range(3)]
    raw = two_nodes().queues(make_queue("ml")).group(group, kind).pods(*pods)
    trace = take(raw).trace
    (job,) = trace.jobs
    assert {
        "name": job.name,
        "namespace": job.namespace,
        "kind": job.kind,
        "min_available": job.min_available,
        "queue": job.queue,
        "priority": job.priority,
        "gather_timeout": job.gather_timeout,
        "started": job.started,
        "pods": [pod.name for task in job.tasks for pod in task.pods],
    } == {
        "name": "tf",
        "namespace": "default",
        "min_available": 2,
        "queue": "ml",
        "priority": 100,
        "started": None,
        "pods": ["tf-0", "tf-1", "tf-2"],
        **expected,
    }
    outcome = play(trace, lahar, horizon=600)
    assert outcome.jobs["default/tf"].started is not None  # (3 cpu of 8 free)


def test_a_gang_without_a_queue_is_in_the_default_queue_and_takes_its_highest_priority() -> None:
    pods = [make_pod("tf-0").cpu("1").group("tf").priority(5)]
    pods.append(make_pod("tf-1").cpu("1").group("tf").priority(50))
    trace = take(two_nodes().group(make_group("tf").min_member(2)).pods(*pods)).trace
    assert (trace.jobs[0].queue, trace.jobs[0].priority) == ("default", 50)


def test_pods_split_into_tasks_by_task_request_and_constraints() -> None:
    pods = [
        make_pod("tf-ps-0").cpu("1").group("tf").task("ps"),
        make_pod("tf-worker-0").cpu("2").memory("4Gi").group("tf").task("worker"),
        make_pod("tf-worker-1").cpu("2").memory("4Gi").group("tf").task("worker"),
        make_pod("tf-worker-2")
        .cpu("2")
        .memory("4Gi")
        .group("tf")
        .task("worker")
        .tolerate("gpu", "yes"),
    ]
    group = make_group("tf").min_member(4).min_task("worker", 2).min_task("ps", 1)
    trace = take(two_nodes().group(group).pods(*pods)).trace
    tasks = trace.jobs[0].tasks
    assert [
        (t.name, t.replicas, t.cpu, t.memory, t.min_available, t.tolerations) for t in tasks
    ] == [
        ("ps", 1, "1", "0", 1, ()),
        ("worker", 2, "2", "4Gi", 2, ()),
        (
            "worker-2",
            1,
            "2",
            "4Gi",
            None,
            ({"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"},),
        ),
    ]


# -- running gangs and their run times ---------------------------------------------------------


def test_a_running_gang_started_when_its_first_pod_did_on_the_nodes_its_pods_are_on(
    lahar: Policy,
) -> None:
    pods = gang("tf", ["n0", "n1"], cpu="4")
    pods[0].started(ago(30))
    pods[1].started(ago(20))
    group = make_group("tf").min_member(2).phase("Running").annotate(ANNOTATION, "1h-2h")
    waiting = make_group("next").min_member(1).created(ago(1))
    raw = two_nodes().group(group).pods(*pods).group(waiting).pods(*gang("next", [None]))
    taken = take(raw)
    job = job_of(taken.trace, "tf")
    assert job.started == -1800.0
    assert [pod for task in job.tasks for pod in task.pods] == [
        TracePod(name="tf-0", node="n0"),
        TracePod(name="tf-1", node="n1"),
    ]
    assert job.run_time == RunTime(low=3600, high=7200, source="annotation")
    assert [task.duration for task in job.tasks] == [5400.0]
    assert taken.estimates["default/tf"].source == "annotation"
    outcome = play(taken.trace, lahar)
    # 5,400 s in all, 1,800 of them before the snapshot: its nodes free at 3,600, when the
    # pending gang (2 cpu: no room beside it) starts.
    assert outcome.jobs["default/tf"].finished == 3600.0
    assert outcome.jobs["default/next"].started == 3600.0


RUNNING = ago(30)  # when the gangs of the run-time table started


@pytest.mark.parametrize(
    ("changed", "run_time"),
    [
        (  # the annotation on the PodGroup
            lambda raw, group, pods: group.annotate(ANNOTATION, "45m"),
            RunTime(low=2700, high=2700, source="annotation"),
        ),
        (  # on its first pod
            lambda raw, group, pods: pods[0].annotate(ANNOTATION, "1h-3h"),
            RunTime(low=3600, high=10800, source="annotation"),
        ),
        (  # the pods' activeDeadlineSeconds, from their start: at most 1 h, 30 m of it gone
            lambda raw, group, pods: [pod.deadline(3600) for pod in pods],
            RunTime(low=1800, high=3600, source="deadline"),
        ),
        (  # the earliest deadline of the gang's pods
            lambda raw, group, pods: [pods[0].deadline(7200), pods[1].deadline(2400)],
            RunTime(low=1800, high=2400, source="deadline"),
        ),
        (  # a deadline caps the annotation's range
            lambda raw, group, pods: [
                group.annotate(ANNOTATION, "30m-2h"),
                *(pod.deadline(3600) for pod in pods),
            ],
            RunTime(low=1800, high=3600, source="annotation"),
        ),
        (  # the batch/v1 Job owning the pods: its deadline from its own start
            lambda raw, group, pods: [
                raw.batch_job("etl", deadline=3000, started=RUNNING),
                *(pod.owned_by("batch/v1", "Job", "etl") for pod in pods),
            ],
            RunTime(low=1800, high=3000, source="deadline"),
        ),
        (  # nothing says: unknown, held past any horizon
            lambda raw, group, pods: None,
            RunTime(low=FOREVER, high=FOREVER, source="unknown"),
        ),
    ],
)
def test_a_running_gangs_run_time_comes_from_the_first_source_that_gives_one(
    changed: Any, run_time: RunTime
) -> None:
    raw = two_nodes()
    group = make_group("tf").min_member(2).phase("Running")
    pods = gang("tf", ["n0", "n1"], started=RUNNING)
    changed(raw, group, pods)
    job = take(raw.group(group).pods(*pods)).trace.jobs[0]
    assert (job.started, job.run_time) == (-1800.0, run_time)


def test_a_running_gangs_run_time_comes_from_history_else_the_default() -> None:
    def run_time(history: RunHistory, default: tuple[float, float] | None) -> RunTime | None:
        raw = two_nodes().group(make_group("tf").min_member(2).queue("ml")).queues(make_queue("ml"))
        taken = take(raw.pods(*gang("tf", ["n0", "n1"], started=RUNNING)), history, default)
        return taken.trace.jobs[0].run_time

    history = RunHistory().add("default/tf", "ml", 1000, TAKEN_AT - 7200)
    history = history.add("default/tf", "ml", 3000, TAKEN_AT - 3600)
    # (runs of 1,000 and 3,000 s give 1,000-6,000; 1,800 s have gone: it runs that long at least)
    assert run_time(history, (3600, 3600)) == RunTime(
        low=1800, high=6000, source="history (2 runs of default/tf)"
    )
    assert run_time(RunHistory(), (3600, 3600)) == RunTime(low=1800, high=7200, source="default")
    assert run_time(RunHistory(), (2400, 4800)) == RunTime(low=2400, high=4800, source="default")
    # 30 minutes gone, beyond the top of the range: overdue, it may end any moment
    assert run_time(RunHistory(), (600, 1200)) == RunTime(low=1800, high=1800, source="default")


def test_a_volcano_jobs_annotation_and_running_estimate_give_its_gangs_run_time() -> None:
    job = make_job("tf").task("worker", 2, cpu="2")
    group = make_group("tf-uid-tf").min_member(2).phase("Running")
    pods = [
        make_pod(f"tf-worker-{i}").cpu("2").group("tf-uid-tf").task("worker").on(f"n{i}")
        for i in range(2)
    ]
    for pod in pods:
        pod.started(RUNNING)
    estimated = job.set("spec.runningEstimate", "2h")
    trace = take(two_nodes().jobs(estimated).group(group).pods(*pods)).trace
    assert (trace.jobs[0].name, trace.jobs[0].run_time) == (
        "tf",
        RunTime(low=7200, high=7200, source="runningEstimate"),
    )
    annotated = estimated.set("metadata.annotations", {ANNOTATION: "1h"})
    trace = take(two_nodes().jobs(annotated).group(group).pods(*pods)).trace
    assert trace.jobs[0].run_time == RunTime(low=3600, high=3600, source="annotation")


def test_a_partly_bound_gang_keeps_the_nodes_of_its_bound_pods(lahar: Policy) -> None:
    started = make_group("ab").min_member(2).phase("Running").annotate(ANNOTATION, "20m")
    short = make_group("cd").min_member(3).annotate(ANNOTATION, "10m")
    raw = (
        make_raw_cluster()
        .nodes(*(make_node(f"n{i}").cpu("4") for i in range(4)))
        .group(started.created(ago(30)))
        .pods(*gang("ab", ["n0", "n1", None], started=ago(10)))
        .group(short.created(ago(5)))
        .pods(*gang("cd", ["n2", None, None]))
    )
    trace = take(raw).trace
    ab, cd = job_of(trace, "ab"), job_of(trace, "cd")
    assert (ab.started, ab.bound_nodes()) == (-600.0, ["n0", "n1", None])
    assert (cd.started, cd.bound_nodes()) == (None, ["n2", None, None])
    outcome = play(trace, lahar)
    assert outcome.jobs["default/ab"].started == -600.0
    # ab's third pod and cd's other two find room on n2 and n3 at once.
    nodes = {i.pod: i.node for i in outcome.intervals if i.start == 0.0}
    assert (nodes["ab-0"], nodes["ab-1"], nodes["cd-0"]) == ("n0", "n1", "n2")
    assert outcome.jobs["default/cd"].started is not None


def test_a_bound_pod_not_yet_started_starts_its_gang_at_the_snapshot() -> None:
    raw = (
        make_raw_cluster()
        .nodes(make_node("n0"), make_node("n1"))
        .group(make_group("tf").min_member(2))
    )
    raw.pods(*(make_pod(f"tf-{i}").cpu("1").group("tf").on(f"n{i}") for i in range(2)))
    assert take(raw).trace.jobs[0].started == 0.0


def test_a_volcano_job_waiting_for_admission_has_the_pods_its_controller_will_make(
    lahar: Policy,
) -> None:
    job = make_job("vj").queue("ml").task("ps", 1, cpu="1").task("worker", 2, cpu="2")
    group = make_group("vj-uid-vj").min_member(3).queue("ml").phase("Pending")
    raw = two_nodes().queues(make_queue("ml")).jobs(job).group(group)
    taken = take(raw)
    (made,) = taken.trace.jobs
    assert (made.name, made.queue, made.min_available, made.started) == ("vj", "ml", 3, None)
    assert [(t.name, t.replicas, t.cpu, [p.name for p in t.pods]) for t in made.tasks] == [
        ("ps", 1, "1", ["vj-ps-0"]),
        ("worker", 2, "2", ["vj-worker-0", "vj-worker-1"]),
    ]
    assert taken.limits.left_out == []
    outcome = play(taken.trace, lahar, horizon=600)
    assert outcome.jobs["default/vj"].started is not None


def test_a_waiting_jobs_pods_keep_its_templates_tolerations_and_node_affinity() -> None:
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
                ]
            }
        }
    }
    job = make_job("vj").task("worker", 2, cpu="1")
    job.set("spec.tasks[0].template.spec.tolerations", [toleration])
    job.set("spec.tasks[0].template.spec.affinity", affinity)
    group = make_group("vj-uid-vj").min_member(2).phase("Pending")
    (made,) = take(two_nodes().jobs(job).group(group)).trace.jobs
    (task,) = made.tasks
    assert [dict(t) for t in task.tolerations] == [toleration]
    assert task.affinity == affinity


def test_a_gang_short_of_its_minimum_with_no_job_is_left_out_and_named(lahar: Policy) -> None:
    raw = two_nodes().group(make_group("short").min_member(3)).pods(*gang("short", [None, None]))
    taken = take(raw)
    assert taken.trace.jobs == ()
    assert taken.limits.left_out == [
        "default/short: 2 of its 3 pods exist (the others are not created yet)"
    ]
    assert taken.trace.occupied == ()


def test_the_running_pods_of_a_gang_left_out_still_hold_their_nodes(lahar: Policy) -> None:
    """A gang of 3 whose third pod finished: the two still running keep their cpu."""
    group = make_group("short").min_member(3).phase("Running")
    pods = gang("short", ["n0", "n1", "n1"], started=ago(10))
    pods[2].phase("Succeeded")
    waiting = make_group("next").min_member(2).created(ago(1))
    raw = two_nodes().group(group).pods(*pods).group(waiting)
    taken = take(raw.pods(*gang("next", [None, None], cpu="3")))
    assert [job.name for job in taken.trace.jobs] == ["next"]
    assert taken.limits.left_out == [
        "default/short: 2 of its 3 pods exist (the others are not created yet)"
    ]
    assert taken.trace.occupied == (
        Occupied(node="n0", cpu="2", memory="0"),
        Occupied(node="n1", cpu="2", memory="0"),
    )
    outcome = play(taken.trace, lahar, horizon=600)
    assert outcome.jobs["default/next"].started is None  # 2 cpu free per node, 3 asked


@pytest.mark.parametrize(
    ("queues", "queue", "kind", "why"),
    [
        (
            [],
            "nope",
            GroupKind.COSCHEDULING,  # (its queue annotation no webhook checks)
            "default/podgroups.scheduling.x-k8s.io/g: its queue nope does not exist (it waits "
            "until the queue is made)",
        ),
        (
            [
                make_queue("ml"),
                make_queue("team-a").parent("ml"),
                make_queue("team-b").parent("ml"),
            ],
            "ml",
            GroupKind.VOLCANO,
            "default/g: its queue ml has child queues (team-a, team-b): gangs go in leaf queues",
        ),
        (
            [make_queue("root"), make_queue("ml")],
            "root",
            GroupKind.NATIVE,
            "default/podgroups.scheduling.k8s.io/g: its queue is root, the top of the queue "
            "tree: gangs go in leaf queues",
        ),
    ],
)
def test_a_gang_in_a_queue_it_cannot_run_from_is_left_out_and_named(
    lahar: Policy, queues: list[QueueBuilder], queue: str, kind: GroupKind, why: str
) -> None:
    """The engine keeps such a gang waiting: its pending pods play no part, its bound ones
    still hold their nodes; the rest of the cluster is taken and plays."""
    group = make_group("g").min_member(2).queue(queue)
    pods = [make_pod(f"g-{i}").cpu("1").group("g", kind) for i in range(2)]
    pods[0].on("n0").started(ago(5))
    raw = two_nodes().queues(*queues).group(group, kind).pods(*pods)
    raw.group(make_group("ok").min_member(1)).pods(*gang("ok", [None]))
    taken = take(raw)
    assert [job.name for job in taken.trace.jobs] == ["ok"]
    assert taken.limits.left_out == [why]
    assert taken.trace.occupied == (Occupied(node="n0", cpu="1", memory="0"),)
    assert play(taken.trace, lahar, horizon=600).jobs["default/ok"].started is not None


@pytest.mark.parametrize(
    ("said", "source"),
    [
        (lambda job, group: group.annotate(ANNOTATION, "0s"), "annotation"),
        (lambda job, group: job.set("spec.runningEstimate", "0s"), "runningEstimate"),
    ],
)
def test_a_run_time_of_nothing_plays_as_the_shortest(lahar: Policy, said: Any, source: str) -> None:
    job = make_job("vj").task("worker", 1, cpu="1")
    group = make_group("vj-uid-vj").min_member(1).phase("Pending")
    said(job, group)
    taken = take(two_nodes().jobs(job).group(group))
    (made,) = taken.trace.jobs
    assert (made.run_time, made.tasks[0].duration) == (
        RunTime(low=0, high=SHORTEST, source=source),
        SHORTEST,
    )
    outcome = play(taken.trace, lahar, horizon=600)
    assert outcome.jobs["default/vj"].finished is not None


# -- pods outside gangs, finished pods ---------------------------------------------------------


def test_pods_of_no_gang_bound_to_a_node_are_what_is_occupied_there(lahar: Policy) -> None:
    others = [
        make_pod("ds-a").cpu("500m").memory("1Gi").on("n0").owned_by("apps/v1", "DaemonSet", "x"),
        make_pod("web-0").cpu("250m").memory("512Mi").on("n0").scheduler("default-scheduler"),
        make_pod("plain").cpu("1").on("n1"),  # (Lahar's, no gang: bound, so it holds its cpu)
    ]
    taken = take(two_nodes().pods(*others))
    assert taken.trace.occupied == (
        Occupied(node="n0", cpu="750m", memory="1536Mi", pods=2),
        Occupied(node="n1", cpu="1", memory="0", pods=1),
    )
    assert (taken.trace.jobs, taken.limits.outside_gangs) == ((), 3)
    # 4 cpu per node: a pod of 3.5 cpu fits on n1 only after the others' 1, not on n0 (750m).
    raw = two_nodes().pods(*others).group(make_group("big").min_member(2))
    trace = take(raw.pods(*gang("big", [None, None], cpu="3500m"))).trace
    outcome = play(trace, lahar, horizon=600)
    assert outcome.jobs["default/big"].started is None


def test_pending_pods_of_another_scheduler_are_named_and_a_pending_plain_pod_is_a_gang_of_one(
    lahar: Policy,
) -> None:
    pods = [
        make_pod("web-1").cpu("1").scheduler("default-scheduler"),
        make_pod("web-0").cpu("1").scheduler("default-scheduler").ns("shop"),
        make_pod("lone").cpu("1").scheduler("lahar").annotate(ANNOTATION, "5m"),
    ]
    taken = take(two_nodes().pods(*pods))
    assert taken.limits.pending_elsewhere == ["default/web-1", "shop/web-0"]
    (lone,) = taken.trace.jobs
    assert (lone.name, lone.min_available, lone.run_time, lone.tasks[0].pods) == (
        "lone",
        None,
        RunTime(low=300, high=300, source="annotation"),
        (TracePod(name="lone"),),
    )
    outcome = play(taken.trace, lahar, horizon=600)
    assert outcome.jobs["default/lone"].finished is not None


def test_finished_pods_and_completed_gangs_are_left_out() -> None:
    done = make_group("done").min_member(2).phase("Completed")
    running = make_group("tf").min_member(2).phase("Running")
    tf = gang("tf", ["n0", "n1", "n1"], cpu="1", started=ago(5))
    tf[2].phase("Failed")
    raw = (
        two_nodes()
        .group(done)
        .pods(*(pod.phase("Succeeded") for pod in gang("done", ["n0", "n1"], started=ago(50))))
        .group(running)
        .pods(*tf)
        .pods(make_pod("batch").cpu("1").on("n0").phase("Succeeded"))
        .pods(make_pod("crashed").cpu("1").on("n1").phase("Failed"))
    )
    taken = take(raw)
    assert [(job.name, job.bound_nodes()) for job in taken.trace.jobs] == [("tf", ["n0", "n1"])]
    assert (taken.trace.occupied, taken.limits.outside_gangs) == ((), 0)


def test_a_completed_gang_whose_pods_are_still_listed_is_no_job_and_holds_nothing() -> None:
    done = make_group("done").min_member(2).phase("Completed")
    raw = two_nodes().group(done).pods(*gang("done", ["n0", "n1"], started=ago(50)))
    taken = take(raw)
    assert (taken.trace.jobs, taken.trace.occupied) == ((), ())


# -- HyperNodes, PriorityClasses, order --------------------------------------------------------


def four_nodes() -> RawClusterBuilder:
    racks = ("r0", "r0", "r1", "r1")
    return make_raw_cluster().nodes(
        *(make_node(f"n{i}").cpu("4").label("rack", rack) for i, rack in enumerate(racks))
    )


def switch(name: str, **fields: Any) -> TraceHyperNode:
    return TraceHyperNode(name=name, tier=1, tier_name="switch", **fields)


@pytest.mark.parametrize(
    ("hyper_nodes", "listed"),
    [
        (
            [make_hyper_node("s0").tier(1, "switch").nodes("n0", "n1")],
            [switch("s0", nodes=("n0", "n1"))],
        ),
        (
            [make_hyper_node("s1").tier(1, "switch").regex("^n[23]$")],
            [switch("s1", nodes=("n2", "n3"))],
        ),
        (
            [make_hyper_node("s0").tier(1, "switch").labelled(rack="r0")],
            [switch("s0", nodes=("n0", "n1"))],
        ),
        (  # (an exact name that is no node adds nothing)
            [make_hyper_node("s0").tier(1, "switch").nodes("n0", "gone")],
            [switch("s0", nodes=("n0",))],
        ),
        (  # tier 2 lists the tier-1 HyperNodes, not their nodes
            [
                make_hyper_node("s0").tier(1, "switch").nodes("n0", "n1"),
                make_hyper_node("s1").tier(1, "switch").regex("^n[23]$"),
                make_hyper_node("spine").tier(2, "spine").hyper_nodes("s0", "s1"),
            ],
            [
                switch("s0", nodes=("n0", "n1")),
                switch("s1", nodes=("n2", "n3")),
                TraceHyperNode(name="spine", tier=2, tier_name="spine", hyper_nodes=("s0", "s1")),
            ],
        ),
        (  # a HyperNode of both: its own nodes and those under a member
            [
                make_hyper_node("s0").tier(1, "switch").labelled(rack="r0"),
                make_hyper_node("top").tier(2).hyper_nodes("s0").nodes("n3"),
            ],
            [
                switch("s0", nodes=("n0", "n1")),
                TraceHyperNode(name="top", tier=2, nodes=("n3",), hyper_nodes=("s0",)),
            ],
        ),
        (  # three tiers, one member each: each lists the one just below it
            [
                make_hyper_node("s0").tier(1, "switch").nodes("n0", "n1"),
                make_hyper_node("spine").tier(2, "spine").hyper_nodes("s0"),
                make_hyper_node("zone").tier(3, "zone").hyper_nodes("spine"),
            ],
            [
                switch("s0", nodes=("n0", "n1")),
                TraceHyperNode(name="spine", tier=2, tier_name="spine", hyper_nodes=("s0",)),
                TraceHyperNode(name="zone", tier=3, tier_name="zone", hyper_nodes=("spine",)),
            ],
        ),
    ],
)
def test_hyper_nodes_are_exact_lists_of_their_selectors_nodes(
    hyper_nodes: list[HyperNodeBuilder], listed: list[TraceHyperNode]
) -> None:
    topology = take(four_nodes().hyper_nodes(*hyper_nodes)).trace.topology
    assert topology is not None
    assert list(topology.hyper_nodes) == listed


def test_no_hyper_node_no_topology() -> None:
    assert take(four_nodes()).trace.topology is None


def test_a_gang_asking_for_one_switch_plays_on_the_snapshots_hyper_nodes(lahar: Policy) -> None:
    """n1 is taken: a gang of two whole nodes within one switch can only have s1's."""
    hyper_nodes = (
        make_hyper_node("s0").tier(1, "switch").labelled(rack="r0"),
        make_hyper_node("s1").tier(1, "switch").labelled(rack="r1"),
        make_hyper_node("spine").tier(2, "spine").hyper_nodes("s0", "s1"),
    )
    group = make_group("tf").min_member(2).network(tier=1)
    raw = four_nodes().hyper_nodes(*hyper_nodes).group(group)
    raw.pods(*gang("tf", [None, None], cpu="4"), make_pod("ds").cpu("1").on("n1"))
    trace = take(raw).trace
    assert trace.jobs[0].network_topology == TraceNetworkTopology(highest_tier_allowed=1)
    outcome = play(trace, lahar, horizon=600)
    assert sorted(i.node for i in outcome.intervals if i.job == "default/tf") == ["n2", "n3"]


def test_priority_classes_are_the_traces_by_name() -> None:
    raw = two_nodes().priority_class("high", 1000).priority_class("low", -10, global_default=True)
    trace = take(raw).trace
    assert trace.priority_classes == {"high": 1000, "low": -10}
    assert trace.default_priority_class == "low"  # (globalDefault: a pod naming none gets it)
    assert take(two_nodes().priority_class("high", 1000)).trace.default_priority_class is None


def test_gangs_are_in_the_order_they_were_created(lahar: Policy) -> None:
    raw = two_nodes()
    for name, minutes in (("a", 1), ("b", 30), ("c", 10)):
        raw.group(make_group(name).min_member(1).created(ago(minutes)))
        raw.pods(*gang(name, [None], cpu="4"))
    raw.pods(make_pod("lone").cpu("4").scheduler("lahar").created(ago(20)))
    trace = take(raw).trace
    assert [job.name for job in trace.jobs] == ["b", "lone", "c", "a"]
    # Two fit at once, the older first: b and lone run, c and a wait.
    outcome = play(trace, lahar, horizon=600)
    assert {key for key, job in outcome.jobs.items() if job.started == 0.0} == {
        "default/b",
        "default/lone",
    }


def test_the_snapshot_is_taken_at_its_time() -> None:
    assert take(two_nodes()).trace.taken_at == TAKEN


def test_an_unreadable_run_time_annotation_is_skipped_and_named() -> None:
    group = make_group("tf").min_member(2).phase("Running").annotate(ANNOTATION, "soon")
    taken = take(two_nodes().group(group).pods(*gang("tf", ["n0", "n1"])))
    assert job_of(taken.trace, "tf").run_time == RunTime(
        low=FOREVER, high=FOREVER, source="unknown"
    )
    [skipped] = taken.limits.skipped
    assert skipped.startswith(f"default/tf: {ANNOTATION} 'soon': invalid duration 'soon'")
    assert skipped.endswith(": skipped")


def test_a_pod_bound_to_a_node_that_no_longer_exists_is_left_out_and_named(
    lahar: Policy,
) -> None:
    group = make_group("tf").min_member(1).phase("Running")
    taken = take(two_nodes().group(group).pods(*gang("tf", ["n0", "gone"])))
    job = job_of(taken.trace, "tf")
    assert [pod.name for task in job.tasks for pod in task.pods] == ["tf-0"]
    assert taken.limits.left_out == ["pod default/tf-1: bound to node gone, which no longer exists"]
    assert play(taken.trace, lahar).jobs["default/tf"].started is not None
