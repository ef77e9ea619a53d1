"""The Job `lahar whatif -f` is asked about: refused with the very message the admission webhook
gives for it, refused naming what a file holds when it holds no single Job, and otherwise played
as its controller would make it (requests, minimums, constraints, priority, topology) with its
run time from the first source that gives one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.admission.admit import Settings, mutate_job, validate_job
from extender.api.run_times import RunHistory
from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate.cluster_gangs import FOREVER
from extender.simulate.job_input import Asked, Refused, read_job
from extender.simulate.run import Simulation
from extender.simulate.trace import (
    RunTime,
    Task,
    Trace,
    TraceJob,
    TraceNetworkTopology,
    parse_trace,
)
from tests.builders import (
    JobBuilder,
    make_group,
    make_job,
    make_pod,
    make_queue,
    make_review,
    make_trace,
    make_trace_job,
)
from tests.unit.admission.helpers import Queues, apply_patch

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
ANNOTATION = "lahar.io/expected-run-time"
GPU_TAINT = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}


def snapshot_trace() -> Trace:
    """Two plain nodes and a tainted GPU node, under one switch; queues `research`, `closed`
    (Closed) and `ml` (parent of `team-a`); PriorityClasses; one job already there."""
    return (
        make_trace()
        .nodes(names=["n0", "n1"], cpu="8", memory="32Gi")
        .nodes(
            names=["gpu-0"],
            cpu="8",
            memory="64Gi",
            gpu="4",
            labels={"pool": "gpu"},
            taints=[{"key": "gpu", "effect": "NoSchedule"}],
        )
        .queue("research")
        .queue("closed", state="Closed")
        .queue("ml")
        .queue("team-a", parent="ml")
        .set("priorityClasses", {"high": 1000, "low": 10})
        .set(
            "topology",
            {
                "hyperNodes": [
                    {"name": "s0", "tier": 1, "tierName": "switch", "nodes": ["n0", "n1"]}
                ]
            },
        )
        .job(make_trace_job("old").task("w", 1, cpu="1").set(namespace="default", queue="team-a"))
        .model()
    )


def cluster_queues() -> Queues:
    """The same queues as the webhook's cache of that cluster holds them, and its PodGroup."""
    return Queues(
        make_queue("default").state("Open"),
        make_queue("research").state("Open"),
        make_queue("closed").state("Closed"),
        make_queue("ml").state("Open"),
        make_queue("team-a").parent("ml").state("Open"),
    ).with_groups("team-a", "default/old")


def ask(
    job: JobBuilder | str,
    *,
    history: RunHistory | None = None,
    run_time: tuple[float, float] | None = None,
    default: tuple[float, float] | None = None,
) -> Asked | Refused:
    text = job if isinstance(job, str) else yaml.safe_dump(job.build())
    return read_job(
        text,
        snapshot_trace(),
        namespace="ml-team",
        history=history or RunHistory(),
        run_time=run_time,
        default=default,
    )


def asked(job: JobBuilder, **given: Any) -> TraceJob:
    answer = ask(job, **given)
    assert isinstance(answer, Asked), answer
    return answer.job


def webhook_denial(body: dict[str, Any]) -> str:
    """What the admission webhook answers kubectl for a CREATE of `body`, in the API server's
    order: the mutating rule, its patch applied, then the validating rule."""
    queues, settings = cluster_queues(), Settings()
    mutated = mutate_job(make_review(body).request(), queues, settings)
    if mutated.message:
        return mutated.message
    patched = apply_patch(body, mutated.decision.patch)
    return validate_job(make_review(patched).request(), queues, settings).message


def tf() -> JobBuilder:
    return make_job("tf").ns("ml-team").queue("research").task("worker", 2, cpu="2")


# -- refused as the webhook refuses it ---------------------------------------------------------


@pytest.mark.parametrize(
    "job",
    [
        tf().min_available(3),  # above the replicas
        tf().queue("nope"),  # a queue that does not exist
        tf().queue("closed"),  # a Closed queue
        tf().queue("ml"),  # a queue with child queues
        make_job("tf").ns("ml-team").task("Worker_1"),  # a bad task name
        tf().task("worker"),  # a task name twice
        make_job("tf").ns("ml-team").task("worker", 2, min_available=3),
        make_job("tf").ns("ml-team"),  # no task
        tf().set("spec.tasks[0].replicas", -1),
        tf().set("spec.tasks", "worker"),  # unreadable: the mutating rule refuses it
        tf().set("metadata.name", "TF"),  # its pods could not be named so
        tf().set("spec.maxRetry", -2).queue("nope"),  # two problems, both named
    ],
)
def test_a_job_the_webhook_refuses_is_refused_with_the_webhooks_message(job: JobBuilder) -> None:
    expected = webhook_denial(job.build())
    assert expected.startswith("Job ml-team/")  # (the webhook does refuse it)
    assert ask(job) == Refused(expected)


def test_a_job_naming_no_namespace_is_refused_as_in_the_namespace_given() -> None:
    job = make_job("tf").queue("nope").task("worker").unset("metadata.namespace")
    expected = webhook_denial(job.build() | {"metadata": {"name": "tf", "namespace": "ml-team"}})
    assert ask(job) == Refused(expected)
    assert "ml-team/tf" in expected


@pytest.mark.parametrize(
    ("documents", "holds"),
    [
        ([], "nothing"),
        ([tf().build(), make_job("b").task("w").build()], "Job (batch.volcano.sh/v1alpha1), Job "),
        ([make_pod("p").build()], "Pod (v1)"),
        ([tf().build(), make_group("tf").build()], "Job (batch.volcano.sh/v1alpha1), PodGroup "),
        ([{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}}], "Job (batch/v1)"),
        ([{"apiVersion": "v1"}], "an object with no kind (v1)"),
    ],
)
def test_a_file_holding_no_single_job_is_refused_naming_what_it_holds(
    documents: list[Any], holds: str
) -> None:
    answer = ask(yaml.safe_dump_all(documents))
    assert isinstance(answer, Refused)
    prefix = "whatif takes one Volcano Job (batch.volcano.sh/v1alpha1, kind Job); the file holds "
    assert answer.message.startswith(prefix + holds)


def test_a_file_that_is_not_yaml_is_refused() -> None:
    answer = ask("kind: Job\nspec: [tasks\n")
    assert isinstance(answer, Refused) and answer.message.startswith("not YAML: ")


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            tf().scheduler_name("default-scheduler"),  # (the webhook lets it pass unread)
            "Job ml-team/tf is for scheduler default-scheduler, not one Lahar serves (lahar, "
            "volcano): there is no Lahar decision to show",
        ),
        (
            tf().set("spec.tasks[0].replicas", 0),
            "Job ml-team/tf has no pod to play: each of its tasks has 0 replicas",
        ),
        (
            tf().ns("ML_Team"),
            "Job ML_Team/tf: namespace 'ML_Team' must be lower case letters, digits and '-', "
            "starting and ending with a letter or digit",
        ),
    ],
)
def test_a_job_the_webhook_lets_through_but_that_cannot_play_is_refused_saying_why(
    job: JobBuilder, message: str
) -> None:
    assert webhook_denial(job.build()) == ""
    assert ask(job) == Refused(message)


# -- played as its controller would make it ----------------------------------------------------


def test_a_job_is_its_tasks_with_their_requests_minimums_and_constraints() -> None:
    job = (
        make_job("train")
        .ns("ml-team")
        .queue("research")
        .min_available(3)
        .task("ps", 1, cpu="500m")
        .task(
            "worker",
            4,
            cpu="4",
            min_available=2,
            node_selector={"pool": "gpu"},
            tolerations=[GPU_TAINT],
        )
        .set(
            "spec.tasks[1].template.spec.containers[0].resources",
            {
                "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                "limits": {"nvidia.com/gpu": "1"},
            },
        )
        .set(
            "spec.tasks[1].template.spec.affinity",
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}
                        ]
                    }
                }
            },
        )
        .task("idle", 0)  # (no pod: no task)
    )
    made = asked(job)
    assert (made.name, made.namespace, made.kind, made.queue, made.min_available) == (
        "train",
        "ml-team",
        "volcano",
        "research",
        3,
    )
    assert [t.model_dump(exclude={"duration"}) for t in made.tasks] == [
        Task(name="ps", replicas=1, cpu="500m", memory="0", duration=1, min_available=1).model_dump(
            exclude={"duration"}
        ),
        Task(
            name="worker",
            replicas=4,
            cpu="4",
            memory="16Gi",
            gpu="1",
            duration=1,
            min_available=2,
            node_selector={"pool": "gpu"},
            tolerations=(GPU_TAINT,),
            affinity=job.build()["spec"]["tasks"][1]["template"]["spec"]["affinity"],
        ).model_dump(exclude={"duration"}),
    ]


@pytest.mark.parametrize(
    ("job", "priority", "priority_class"),
    [
        (tf(), 0, None),
        (tf().priority_class("high"), 1000, "high"),
        (tf().priority_class("low"), 10, "low"),
        (tf().set("spec.tasks[0].template.spec.priorityClassName", "high"), 1000, "high"),
        (
            tf().priority_class("low").task("chief", 1, priority_class_name="high"),
            1000,
            "low",
        ),
        (tf().priority_class("unknown"), 0, "unknown"),
    ],
)
def test_a_jobs_priority_is_its_pods_highest_priority_class_value_in_the_snapshot(
    job: JobBuilder, priority: int, priority_class: str | None
) -> None:
    made = asked(job)
    assert (made.priority, made.priority_class) == (priority, priority_class)


@pytest.mark.parametrize(
    ("job", "preemptable"),
    [
        (tf(), True),
        (tf().set("metadata.annotations", {"volcano.sh/preemptable": "false"}), False),
        (tf().set("metadata.labels", {"volcano.sh/preemptable": "false"}), False),
        (tf().set("metadata.annotations", {"volcano.sh/preemptable": "true"}), True),
    ],
)
def test_a_job_says_whether_it_may_be_evicted_as_its_pod_group_will(
    job: JobBuilder, preemptable: bool
) -> None:
    assert asked(job).preemptable is preemptable


@pytest.mark.parametrize(
    ("topology", "expected"),
    [
        (None, None),
        (
            {"mode": "hard", "highestTierAllowed": 1},
            TraceNetworkTopology(mode="hard", highest_tier_allowed=1),
        ),
        (
            {"mode": "soft", "highestTierName": "switch"},
            TraceNetworkTopology(mode="soft", highest_tier_name="switch"),
        ),
    ],
)
def test_a_jobs_network_topology_is_the_trace_jobs(
    topology: dict[str, Any] | None, expected: TraceNetworkTopology | None
) -> None:
    job = tf() if topology is None else tf().set("spec.networkTopology", topology)
    assert asked(job).network_topology == expected


def test_a_job_naming_no_namespace_is_in_the_namespace_given() -> None:
    made = asked(make_job("tf").task("worker").unset("metadata.namespace"))
    assert (made.namespace, made.queue) == ("ml-team", "default")


def _history() -> RunHistory:
    history = RunHistory()
    for seconds in (600, 1200, 1800):
        history = history.add("ml-team/tf", "research", seconds, 1.8e9)
    return history


def _queue_history() -> RunHistory:
    history = RunHistory()
    for seconds in (100, 200, 300, 400):
        history = history.add("ml-team/other", "research", seconds, 1.8e9)
    return history


@pytest.mark.parametrize(
    ("job", "given", "run_time"),
    [
        (  # --run-time over everything the Job says
            tf().set("metadata.annotations", {ANNOTATION: "2h"}).set("spec.runningEstimate", "3h"),
            {"run_time": (600.0, 1200.0), "history": _history()},
            RunTime(low=600, high=1200, source="given"),
        ),
        (  # its annotation, over its runningEstimate
            tf()
            .set("metadata.annotations", {ANNOTATION: "30m-1h"})
            .set("spec.runningEstimate", "3h"),
            {"history": _history()},
            RunTime(low=1800, high=3600, source="annotation"),
        ),
        (  # its runningEstimate, over the history
            tf().set("spec.runningEstimate", "3h"),
            {"history": _history()},
            RunTime(low=10800, high=10800, source="runningEstimate"),
        ),
        (  # the history of its own runs (by namespace/name), over its queue's and the default
            tf(),
            {"history": _history(), "default": (60.0, 60.0)},
            RunTime(low=720, high=1680, source="history (3 runs of ml-team/tf)"),
        ),
        (  # its queue's history
            tf(),
            {"history": _queue_history()},
            RunTime(low=130, high=370, source="history (4 runs in queue research)"),
        ),
        (  # the default given
            tf(),
            {"default": (3600.0, 3600.0)},
            RunTime(low=1800, high=7200, source="default"),
        ),
        (  # nothing: unknown, it holds its nodes past any horizon
            tf(),
            {},
            RunTime(low=FOREVER, high=FOREVER, source="unknown"),
        ),
        (  # a run time of nothing plays as the shortest there is
            tf(),
            {"run_time": (0.0, 0.0)},
            RunTime(low=0, high=1e-3, source="given"),
        ),
    ],
)
def test_a_jobs_run_time_comes_from_the_first_source_that_gives_one(
    job: JobBuilder, given: dict[str, Any], run_time: RunTime
) -> None:
    answer = ask(job, **given)
    assert isinstance(answer, Asked), answer
    assert answer.job.run_time == run_time
    assert answer.estimate.source == run_time.source
    low, high = run_time.low, run_time.high
    assert all(low <= task.duration <= high for task in answer.job.tasks)


def test_the_job_asked_plays_in_the_snapshot_where_its_constraints_let_it() -> None:
    """Its GPU pods go to the tainted GPU node only, and it ends after its run time."""
    job = (
        make_job("train")
        .ns("ml-team")
        .priority_class("high")
        .task("worker", 2, cpu="2", node_selector={"pool": "gpu"}, tolerations=[GPU_TAINT])
        .set("metadata.annotations", {ANNOTATION: "10m"})
    )
    made = asked(job)
    trace = snapshot_trace()
    played = trace.model_copy(update={"jobs": (*trace.jobs, made)})
    played = parse_trace(played.model_dump(by_alias=True, exclude_defaults=True, mode="json"))
    outcome = Simulation(played, _policy(), "lahar", horizon=3600).run()
    record = outcome.jobs["ml-team/train"]
    assert (record.started, record.finished) == (0.0, 600.0)
    assert {i.node for i in outcome.intervals if i.job == "ml-team/train"} == {"gpu-0"}


def _policy() -> Policy:
    return load_policy(POLICY, REGISTRY)


@pytest.mark.parametrize(
    ("job", "priority"),
    [
        (tf(), 10),  # (no pod names one: each gets the globalDefault class)
        (tf().priority_class("high"), 1000),
        (tf().task("chief", 1, priority_class_name="high"), 1000),
    ],
)
def test_a_pod_naming_no_priority_class_gets_the_snapshots_global_default(
    job: JobBuilder, priority: int
) -> None:
    """The API server gives a pod that names no PriorityClass the one marked globalDefault: so
    does the replay of a Job asked about."""
    trace = snapshot_trace().model_copy(update={"default_priority_class": "low"})
    text = yaml.safe_dump(job.build())
    answer = read_job(text, trace, namespace="ml-team", history=RunHistory())
    assert isinstance(answer, Asked), answer
    assert answer.job.priority == priority
