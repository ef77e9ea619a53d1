"""One AdmissionRequest in, one Outcome out: each rule set takes only its resource and
operations, and a denial's message names the object and lists every problem."""

from __future__ import annotations

import re
from typing import Any

import pytest

from extender.admission.admit import (
    RULES,
    Outcome,
    Rule,
    Settings,
    mutate_job,
    mutate_pod,
    mutate_queue,
    validate_hyper_node,
    validate_job,
    validate_pod_group,
    validate_queue,
)
from extender.admission.problems import SHOWN, AdmissionDecision, Problem
from extender.api.scheduling import GroupKind
from tests.builders import (
    JobBuilder,
    PodBuilder,
    ReviewBuilder,
    make_group,
    make_job,
    make_pod,
    make_queue,
    make_review,
)
from tests.unit.admission.helpers import Queues, apply_patch, cluster_queues

SCHEDULER = "lahar"


def tf() -> JobBuilder:
    return make_job("tf").ns("ml").task("ps").task("worker", 2)


def stored() -> JobBuilder:
    """tf() as the API server stores it: with its defaults."""
    return (
        tf()
        .queue("default")
        .scheduler_name(SCHEDULER)
        .max_retry(3)
        .set("spec.tasks[0].minAvailable", 1)
        .set("spec.tasks[1].minAvailable", 2)
        .set("spec.tasks[0].maxRetry", 3)
        .set("spec.tasks[1].maxRetry", 3)
        .min_available(3)
    )


def run(rule: Rule, review: ReviewBuilder, view: Queues | None = None) -> Outcome:
    return rule(review.request(), view or cluster_queues(), Settings(SCHEDULER))


def test_rules_by_path() -> None:
    assert {path: (label, rule) for path, (label, rule) in RULES.items()} == {
        "/mutate/jobs": ("jobs", mutate_job),
        "/mutate/pods": ("pods", mutate_pod),
        "/mutate/queues": ("queues", mutate_queue),
        "/validate/jobs": ("jobs", validate_job),
        "/validate/queues": ("queues", validate_queue),
        "/validate/podgroups": ("podgroups", validate_pod_group),
        "/validate/hypernodes": ("hypernodes", validate_hyper_node),
    }


# -- wrong resource, subresource or operation -------------------------------------------------

JOB = tf().build()
QUEUE = make_queue("research").build()
GROUP = make_group("tf").build()
HYPER_NODE = {
    "apiVersion": "topology.volcano.sh/v1alpha1",
    "kind": "HyperNode",
    "metadata": {"name": "s0"},
    "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]},
}


@pytest.mark.parametrize(
    ("rule", "review", "reason"),
    [
        (
            mutate_job,
            make_review(QUEUE),
            "this endpoint admits jobs.batch.volcano.sh, not queues.scheduling.volcano.sh: "
            "check the webhook configuration",
        ),
        (validate_job, make_review(JOB).resource("batch", "jobs"), "not jobs.batch:"),
        (validate_job, make_review(JOB).sub_resource("status"), "not jobs/status.batch.volcano.sh"),
        (mutate_job, make_review(JOB).sub_resource("scale"), "not jobs/scale.batch.volcano.sh"),
        (validate_queue, make_review(JOB), "admits queues.scheduling.volcano.sh, not jobs.batch"),
        (validate_queue, make_review(QUEUE).sub_resource("status"), "not queues/status."),
        (validate_pod_group, make_review(QUEUE), "admits podgroups.scheduling.volcano.sh, not q"),
        (validate_pod_group, make_review(GROUP).resource("", "pods"), "not pods.:"),
        (
            mutate_job,
            make_review(JOB).delete(),
            "operation DELETE is not admitted here (only CREATE, UPDATE)",
        ),
        (validate_job, make_review(JOB).delete(), "operation DELETE is not admitted here"),
        (validate_job, make_review(JOB).operation("CONNECT"), "operation CONNECT is not admitted"),
        (
            validate_queue,
            make_review(QUEUE).operation("CONNECT"),
            "operation CONNECT is not admitted here (only CREATE, UPDATE, DELETE)",
        ),
        (
            validate_pod_group,
            make_review(GROUP).update(GROUP),
            "operation UPDATE is not admitted here (only CREATE)",
        ),
        (validate_pod_group, make_review(GROUP).delete(), "operation DELETE is not admitted"),
        (
            validate_hyper_node,
            make_review(QUEUE),
            "admits hypernodes.topology.volcano.sh, not queues",
        ),
        (validate_hyper_node, make_review(HYPER_NODE).sub_resource("status"), "not hypernodes/st"),
        (
            validate_hyper_node,
            make_review(HYPER_NODE).delete(),
            "operation DELETE is not admitted here (only CREATE, UPDATE)",
        ),
    ],
    ids=[
        "mutate-job-given-queue",
        "validate-job-other-group",
        "validate-job-status",
        "mutate-job-scale",
        "validate-queue-given-job",
        "validate-queue-status",
        "validate-group-given-queue",
        "validate-group-given-pod",
        "mutate-job-delete",
        "validate-job-delete",
        "validate-job-connect",
        "validate-queue-connect",
        "validate-group-update",
        "validate-group-delete",
        "validate-hyper-node-given-queue",
        "validate-hyper-node-status",
        "validate-hyper-node-delete",
    ],
)
def test_wrong_requests_are_denied_saying_so(
    rule: Rule, review: ReviewBuilder, reason: str
) -> None:
    outcome = run(rule, review)
    assert not outcome.decision.allowed
    [problem] = outcome.decision.problems
    assert problem.path == ""
    assert reason in problem.reason
    assert reason in outcome.message
    assert outcome.decision.patch == ()


# -- jobs ---------------------------------------------------------------------------------------


def test_mutate_returns_the_defaults_patch() -> None:
    outcome = run(mutate_job, make_review(tf().build()))
    assert outcome.decision.allowed
    assert outcome.message == ""
    assert outcome.decision.patch == (
        {"op": "add", "path": "/spec/queue", "value": "default"},
        {"op": "add", "path": "/spec/schedulerName", "value": SCHEDULER},
        {"op": "add", "path": "/spec/maxRetry", "value": 3},
        {"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 1},
        {"op": "add", "path": "/spec/tasks/0/maxRetry", "value": 3},
        {"op": "add", "path": "/spec/tasks/1/minAvailable", "value": 2},
        {"op": "add", "path": "/spec/tasks/1/maxRetry", "value": 3},
        {"op": "add", "path": "/spec/minAvailable", "value": 3},
    )
    assert apply_patch(tf().build(), outcome.decision.patch) == stored().build()


def test_mutate_on_update_defaults_too_and_nothing_for_a_stored_job() -> None:
    outcome = run(mutate_job, make_review(tf().build()).update(stored().build()))
    assert outcome.decision.allowed
    assert len(outcome.decision.patch) == 8
    assert run(mutate_job, make_review(stored().build())).decision.patch == ()


def test_mutate_refuses_a_job_it_cannot_read_and_returns_no_patch() -> None:
    outcome = run(mutate_job, make_review(tf().set("spec.tasks[0].replicas", "two").build()))
    assert not outcome.decision.allowed
    assert outcome.decision.patch == ()
    assert outcome.message == (
        "Job ml/tf is invalid: spec.tasks[0].replicas: Input should be a valid integer, got 'two'"
    )


def test_mutate_leaves_rule_problems_to_the_validating_webhook() -> None:
    outcome = run(mutate_job, make_review(tf().queue("closed").max_retry(-1).build()))
    assert outcome.decision.allowed
    assert outcome.decision.patch


def test_validate_allows_a_good_job() -> None:
    outcome = run(validate_job, make_review(stored().build()))
    assert outcome == Outcome(outcome.decision)
    assert outcome.decision.allowed
    assert outcome.decision.patch == ()


def test_validate_returns_policy_warnings() -> None:
    outcome = run(validate_job, make_review(stored().policy("PodFailed", timeout="5m").build()))
    assert outcome.decision.allowed
    assert outcome.warnings == (
        "spec.policies[0].timeout: Lahar waits only on PodPending; this policy acts at once",
    )


def test_a_denial_lists_every_problem_under_the_job() -> None:
    body = (
        stored()
        .set("spec.tasks[0].minAvailable", 2)
        .set("spec.tasks[1].name", "Worker")
        .max_retry(-3)
        .plugin("horovod")
        .queue("closed")
        .build()
    )
    outcome = run(validate_job, make_review(body))
    assert not outcome.decision.allowed
    assert outcome.message == (
        "Job ml/tf is invalid: "
        "spec.maxRetry: must be from 0 to 2147483647, got -3; "
        "spec.plugins.horovod: unknown plugin "
        "(known: env, svc, ssh, pytorch, tensorflow, mpi, ray, hcclrank); "
        "spec.queue: queue 'closed' is Closed: it takes no new work; "
        "spec.tasks[0].minAvailable: 2 is more than the task's 1 replicas; "
        "spec.tasks[1].name: 'Worker' must be lower case letters, digits and '-', starting and "
        "ending with a letter or digit"
    )
    assert len(outcome.decision.problems) == 5
    assert outcome.warnings == ()


def test_a_denial_caps_the_list() -> None:
    builder = stored()
    for index in range(SHOWN + 3):
        builder.volume("", claim_name=f"c{index}")
    outcome = run(validate_job, make_review(builder.build()))
    assert len(outcome.decision.problems) == SHOWN + 3
    assert outcome.message.startswith("Job ml/tf is invalid: spec.volumes[0].mountPath: required")
    assert outcome.message.endswith("; and 3 more")


def test_a_job_to_be_named_is_called_so() -> None:
    body = stored().generate_name("tf-").queue("nope").build()
    outcome = run(validate_job, make_review(body))
    assert outcome.message == (
        "Job ml/(name to be generated) is invalid: spec.queue: queue 'nope' does not exist"
    )


def test_the_request_name_and_namespace_name_the_object() -> None:
    review = make_review(stored().queue("nope").build()).named("other", "team")
    assert run(validate_job, review).message.startswith("Job team/other is invalid: ")


def test_validate_refuses_a_job_it_cannot_read() -> None:
    outcome = run(validate_job, make_review(stored().set("spec.maxRetry", "3").build()))
    assert outcome.decision.problems == (
        Problem("spec.maxRetry", "Input should be a valid integer, got '3'"),
    )


@pytest.mark.parametrize("rule", [mutate_job, validate_job], ids=["mutate", "validate"])
def test_a_request_without_an_object_is_refused(rule: Rule) -> None:
    outcome = run(rule, make_review(None, "Job").named("tf", "ml"))
    assert outcome.message == "Job ml/tf is invalid: the request carries no Job object"


def test_update_checks_what_may_change() -> None:
    old = stored().build()
    scaled = stored().set("spec.tasks[1].replicas", 5).min_available(6).build()
    assert run(validate_job, make_review(scaled).update(old)).decision.allowed
    moved = stored().queue("research").build()
    outcome = run(validate_job, make_review(moved).update(old))
    assert outcome.decision.problems == (
        Problem(
            "spec.queue",
            "cannot change once the job exists (only minAvailable, priorityClassName and the "
            "tasks' replicas and minAvailable can)",
        ),
    )


def test_update_does_not_recheck_the_queue() -> None:
    """A job already in a queue that closed since may still be scaled."""
    old = stored().queue("closed").build()
    new = (
        stored()
        .queue("closed")
        .set("spec.tasks[1].replicas", 1)
        .set("spec.tasks[1].minAvailable", 1)
        .min_available(2)
        .build()
    )
    assert run(validate_job, make_review(new).update(old)).decision.allowed


def test_update_without_an_old_object_names_every_fixed_field() -> None:
    review = make_review(stored().build()).operation("UPDATE")
    outcome = run(validate_job, review)
    assert not outcome.decision.allowed
    assert "spec.tasks: tasks cannot be added or removed (0 before, 2 now)" in outcome.message


def test_mutated_then_validated_job_is_allowed() -> None:
    """The API server's order: mutate, apply the patch, validate the result."""
    body = tf().plugin("pytorch").task("master").build()
    patch = run(mutate_job, make_review(body)).decision.patch
    defaulted = apply_patch(body, patch)
    assert {"op": "add", "path": "/spec/plugins/svc", "value": []} in patch
    assert run(validate_job, make_review(defaulted)).decision.allowed


# -- queues and pod groups ---------------------------------------------------------------------


def test_queue_create_and_update() -> None:
    good = make_queue("research").weight(2).build()
    assert run(validate_queue, make_review(good)).decision.allowed
    assert run(validate_queue, make_review(good).update(QUEUE)).decision.allowed
    bad = make_queue("research").weight(0).state("Paused").build()
    outcome = run(validate_queue, make_review(bad).update(QUEUE))
    assert outcome.message == (
        "Queue research is invalid: spec.weight: Input should be greater than or equal to 1, got 0"
    )
    outcome = run(validate_queue, make_review(make_queue("research").state("Paused").build()))
    assert outcome.message == (
        "Queue research is invalid: status.state: must be one of Open, Closed, Closing, Unknown, "
        "got 'Paused'"
    )


@pytest.mark.parametrize(
    ("name", "view", "message"),
    [
        ("research", Queues(make_queue("research")), None),
        ("research", Queues().with_groups("other", "a/b"), None),
        (
            "research",
            Queues(make_queue("research")).with_groups("research", "ml/tf", "ml/bert"),
            "Queue research is invalid: queue research still has 2 PodGroup(s) (ml/bert, ml/tf): "
            "delete them or move their jobs to another queue first",
        ),
        (
            "default",
            Queues(make_queue("default")),
            "Queue default is invalid: the default queue cannot be deleted: PodGroups with no "
            "queue use it",
        ),
    ],
    ids=["empty", "unknown", "with-pod-groups", "default"],
)
def test_queue_delete(name: str, view: Queues, message: str | None) -> None:
    review = make_review(make_queue(name).build()).delete()
    outcome = run(validate_queue, review, view)
    assert outcome.decision.allowed is (message is None)
    assert outcome.message == (message or "")


def test_queue_delete_reads_the_name_not_the_object() -> None:
    review = make_review(None, "Queue").operation("DELETE").named("default")
    assert "the default queue cannot be deleted" in run(validate_queue, review).message


def test_queue_without_object_is_refused() -> None:
    outcome = run(validate_queue, make_review(None, "Queue").named("q"))
    assert outcome.message == "Queue q is invalid: the request carries no Queue object"


@pytest.mark.parametrize(
    ("builder", "message"),
    [
        (make_group("tf").ns("ml").queue("research"), None),
        (make_group("tf").ns("ml"), None),
        (
            make_group("tf").ns("ml").queue("closed"),
            "PodGroup ml/tf is invalid: spec.queue: queue 'closed' is Closed: it takes no new work",
        ),
        (
            make_group("tf").ns("ml").queue("gone").min_member(-1),
            "PodGroup ml/tf is invalid: spec.minMember: must be from 0 to 2147483647, got -1; "
            "spec.queue: queue 'gone' does not exist",
        ),
    ],
    ids=["open", "default", "closed", "two-problems"],
)
def test_pod_group_create(builder: Any, message: str | None) -> None:
    outcome = run(validate_pod_group, make_review(builder.build()))
    assert outcome.decision.allowed is (message is None)
    assert outcome.message == (message or "")


# -- pods ---------------------------------------------------------------------------------------

GATE = {"name": "lahar.io/gang"}
VCJOB = "batch.volcano.sh/v1alpha1"


@pytest.mark.parametrize(
    ("pod", "gates"),
    [
        (make_pod("w").group("tf").scheduler("lahar"), [GATE]),
        (
            make_pod("w").group("tf").scheduler("volcano").gated("x.io/quota"),
            [{"name": "x.io/quota"}, GATE],
        ),
        (make_pod("w").group("tf").scheduler("lahar").gated("lahar.io/gang"), [GATE]),
        (make_pod("w").group("tf").scheduler("default-scheduler"), None),
        (make_pod("w").scheduler("lahar"), None),
        (make_pod("w").group("tf").scheduler("lahar").on("n1"), None),
        (make_pod("w").group("tf", GroupKind.COSCHEDULING).scheduler("lahar"), [GATE]),
        (make_pod("w").group("tf", GroupKind.NATIVE).scheduler("volcano"), [GATE]),
        # A Volcano Job's controller creates its pods once the gang is admitted.
        (make_pod("w").group("tf").scheduler("lahar").owned_by(VCJOB, "Job", "tf"), None),
        (make_pod("w").group("tf").scheduler("lahar").owned_by("batch/v1", "Job", "tf"), [GATE]),
    ],
    ids=[
        "gang-pod",
        "beside-another-gate",
        "already-gated",
        "other-scheduler",
        "no-gang",
        "bound",
        "coscheduling",
        "native",
        "volcano-job",
        "kubernetes-job",
    ],
)
def test_gang_pods_of_lahar_schedulers_are_created_behind_its_gate(
    pod: PodBuilder, gates: list[dict[str, str]] | None
) -> None:
    body = pod.build()
    outcome = run(mutate_pod, make_review(body))
    assert outcome.decision.allowed
    gated = apply_patch(body, outcome.decision.patch)
    assert gated["spec"].get("schedulingGates") == (
        gates if gates is not None else body["spec"].get("schedulingGates")
    )
    if gates is None:
        assert outcome.decision.patch == ()


def test_a_pod_naming_its_group_two_ways_is_refused_naming_both_fields() -> None:
    pod = make_pod("w").ns("ml").scheduler("volcano").group("tf")
    body = pod.group("tf", GroupKind.COSCHEDULING).build()
    outcome = run(mutate_pod, make_review(body))
    assert not outcome.decision.allowed
    assert outcome.decision.patch == ()
    assert outcome.message == (
        "Pod ml/w is invalid: metadata.annotations[scheduling.k8s.io/group-name] and "
        "metadata.labels[scheduling.x-k8s.io/pod-group]: both name 'tf': a pod joins one "
        "PodGroup; keep the annotation for a scheduling.volcano.sh PodGroup or the label for a "
        "scheduling.x-k8s.io one"
    )


def test_pod_rules_take_only_pod_creations() -> None:
    outcome = run(mutate_pod, make_review(make_pod("w").build()).update(make_pod("w").build()))
    assert not outcome.decision.allowed
    assert "operation UPDATE is not admitted here (only CREATE)" in outcome.message


# -- HyperNodes ---------------------------------------------------------------------------------


def _hyper_node(*members: dict[str, Any]) -> dict[str, Any]:
    return {**HYPER_NODE, "spec": {"tier": 1, "members": list(members)}}


EXACT = {"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}
BOTH = {"type": "Node", "selector": {"exactMatch": {"name": "n0"}, "regexMatch": {"pattern": "("}}}
LABELS_ON_HYPER_NODE = {
    "type": "HyperNode",
    "selector": {"labelMatch": {"matchLabels": {"a": "b"}}},
}


@pytest.mark.parametrize(
    ("review", "message", "warnings"),
    [
        (make_review(_hyper_node(EXACT)), "", ()),
        (make_review(_hyper_node(EXACT)).update(_hyper_node(EXACT)), "", ()),
        (
            make_review(_hyper_node(EXACT, BOTH)),
            "HyperNode s0 is invalid: spec.members[1].selector: gives exactMatch and regexMatch: "
            "give only one of exactMatch, regexMatch or labelMatch; "
            "spec.members[1].selector.regexMatch.pattern: '(' is not a regular expression: "
            "missing ), unterminated subpattern at position 0",
            (),
        ),
        (
            make_review(_hyper_node()).update(_hyper_node(EXACT)),
            "HyperNode s0 is invalid: spec.members: must list at least one member (a node or a "
            "HyperNode)",
            (),
        ),
        (
            make_review(_hyper_node(EXACT, LABELS_ON_HYPER_NODE)),
            "",
            (
                "spec.members[1].selector.labelMatch takes effect for members of type Node only: "
                "this member of type HyperNode chooses nothing by it",
            ),
        ),
    ],
    ids=["create", "update", "two-selectors", "update-no-members", "labels-warned"],
)
def test_hyper_node_create_and_update(
    review: ReviewBuilder, message: str, warnings: tuple[str, ...]
) -> None:
    outcome = run(validate_hyper_node, review)
    assert outcome.decision.allowed is (not message)
    assert (outcome.message, outcome.warnings) == (message, warnings)


# -- the schedulers served ----------------------------------------------------------------------

ONLY_LAHAR = Settings.serving(("lahar",))
BROKEN = tf().queue("no-such-queue").set("spec.tasks[1].minAvailable", 9)  # two rules broken


def served_by(settings: Settings, rule: Rule, review: ReviewBuilder) -> Outcome:
    return rule(review.request(), cluster_queues(), settings)


@pytest.mark.parametrize(
    ("names", "default", "served"),
    [
        (("lahar", "volcano"), "lahar", {"lahar", "volcano"}),
        (("volcano", "lahar"), "volcano", {"lahar", "volcano"}),
        (("lahar",), "lahar", {"lahar"}),
        (
            ("coscheduling", "lahar", "volcano"),
            "coscheduling",
            {"coscheduling", "lahar", "volcano"},
        ),
    ],
    ids=["shipped", "volcano-first", "lahar-only", "coscheduling-too"],
)
def test_a_job_naming_no_scheduler_gets_the_first_served(
    names: tuple[str, ...], default: str, served: set[str]
) -> None:
    settings = Settings.serving(names)
    assert settings.scheduler_name == default
    assert set(settings.served) == served
    outcome = served_by(settings, mutate_job, make_review(tf().build()))
    assert {"op": "add", "path": "/spec/schedulerName", "value": default} in (
        outcome.decision.patch
    )


def test_the_default_settings_serve_the_shipped_profiles() -> None:
    assert Settings().scheduler_name == "lahar"
    assert set(Settings().served) == {"lahar", "volcano"}


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: Settings.serving(()), "at least one scheduler name must be served"),
        (
            lambda: Settings("volcano", frozenset({"lahar"})),
            "the default scheduler name 'volcano' must be one of those served (lahar)",
        ),
    ],
    ids=["none", "default-not-served"],
)
def test_settings_that_cannot_be_are_refused(make: Any, error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        make()


@pytest.mark.parametrize(
    ("review", "acts"),
    [
        (make_review(BROKEN.scheduler_name("volcano").build()), False),
        (make_review(BROKEN.scheduler_name("default-scheduler").build()), False),
        (make_review(BROKEN.scheduler_name("lahar").build()), True),
        (make_review(BROKEN.build()), True),  # (none: the first served, lahar)
        (
            make_review(BROKEN.scheduler_name("volcano").build()).update(
                stored().scheduler_name("volcano").build()
            ),
            False,
        ),
        (
            make_review(stored().scheduler_name("volcano").build()).update(stored().build()),
            True,
        ),
        (
            make_review(stored().build()).update(stored().scheduler_name("volcano").build()),
            True,
        ),
        (make_review(tf().set("spec.schedulerName", 7).build()), True),
        (make_review(BROKEN.scheduler_name("s" * 64).build()), True),  # (Volcano's schema too)
    ],
    ids=[
        "volcano-job",
        "default-scheduler-job",
        "lahar-job",
        "job-naming-none",
        "volcano-job-update",
        "moved-away-from-lahar",
        "moved-to-lahar",
        "scheduler-name-not-a-string",
        "scheduler-name-no-job-may-have",
    ],
)
def test_only_jobs_of_the_schedulers_served_are_defaulted_and_checked(
    review: ReviewBuilder, acts: bool
) -> None:
    """Serving `lahar` alone: a Job of another scheduler is admitted untouched (allowed, no
    patch, no warning), however broken; one of lahar's, or naming none, is defaulted and checked;
    an UPDATE moving a Job to or from lahar is lahar's (and refused: the scheduler is fixed)."""
    mutated = served_by(ONLY_LAHAR, mutate_job, review)
    validated = served_by(ONLY_LAHAR, validate_job, review)
    untouched = Outcome(AdmissionDecision())
    if acts:
        assert mutated.decision.patch or not validated.decision.allowed
    else:
        assert (mutated, validated) == (untouched, untouched)


def test_moving_a_job_between_schedulers_is_refused_as_a_fixed_field() -> None:
    review = make_review(stored().scheduler_name("volcano").build()).update(stored().build())
    outcome = served_by(ONLY_LAHAR, validate_job, review)
    assert "spec.schedulerName: cannot change once the job exists" in outcome.message


@pytest.mark.parametrize(
    ("scheduler", "settings", "gated"),
    [
        ("volcano", ONLY_LAHAR, False),
        ("lahar", ONLY_LAHAR, True),
        ("coscheduling", Settings.serving(("lahar", "volcano", "coscheduling")), True),
        ("coscheduling", Settings(), False),
        ("volcano", Settings(), True),
    ],
    ids=["volcano-not-served", "lahar", "coscheduling-served", "coscheduling-not", "shipped"],
)
def test_only_gang_pods_of_the_schedulers_served_are_gated_or_refused(
    scheduler: str, settings: Settings, gated: bool
) -> None:
    body = make_pod("w").group("tf").scheduler(scheduler).build()
    outcome = served_by(settings, mutate_pod, make_review(body))
    assert outcome.decision.allowed
    assert bool(outcome.decision.patch) is gated
    both = make_pod("w").group("a").group("b", GroupKind.COSCHEDULING).scheduler(scheduler)
    assert served_by(settings, mutate_pod, make_review(both.build())).decision.allowed is not gated
