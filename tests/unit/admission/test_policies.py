"""Lifecycle policies: events or one exit code, known events and actions, nothing handled twice,
`*` alone, PodPending with a timeout (and a warning for a timeout Lahar does not wait on)."""

from __future__ import annotations

import pytest

from extender.admission.jobs import parse_job
from extender.admission.policies import ACTIONS, EVENTS, policy_problems
from extender.admission.problems import Problem
from tests.builders import JobBuilder, make_job
from tests.unit.admission.helpers import by_path


def job() -> JobBuilder:
    return make_job("a").task("w")


def check(builder: JobBuilder) -> tuple[list[Problem], list[str]]:
    """The job-level policies' problems (at `spec.policies`) and warnings."""
    parsed, problems = parse_job(builder.build())
    assert parsed is not None, problems
    warnings: list[str] = []
    found = list(policy_problems(parsed.spec.policies, warnings, "spec", "policies"))
    return found, warnings


def test_known_events_and_actions() -> None:
    assert EVENTS == (
        "*",
        "PodFailed",
        "PodEvicted",
        "PodPending",
        "Unknown",
        "TaskCompleted",
        "TaskFailed",
        "JobUpdated",
    )
    assert "SyncJob" not in ACTIONS
    assert set(ACTIONS) == {
        "AbortJob",
        "RestartJob",
        "RestartTask",
        "RestartPod",
        "RestartPartition",
        "TerminateJob",
        "CompleteJob",
        "ResumeJob",
    }


@pytest.mark.parametrize(
    "builder",
    [
        job(),
        job().policy("PodEvicted", "RestartJob").policy("TaskCompleted", "CompleteJob"),
        job().policy(events=["PodFailed", "PodEvicted"], action="RestartTask"),
        job().policy(events=["PodFailed", "PodFailed"], action="RestartTask"),
        job().policy("PodFailed", events=["PodFailed"], action="AbortJob"),
        job().policy("*", "AbortJob"),
        job().policy(exit_code=3, action="RestartPod").policy(exit_code=-1, action="AbortJob"),
        job().policy("PodFailed", "RestartJob").policy(exit_code=137, action="RestartJob"),
        job().policy("PodPending", "RestartPod", timeout="10m"),
        job().policy(events=["PodPending"], action="AbortJob", timeout="1h30m"),
    ],
    ids=[
        "none",
        "two-events",
        "events-list",
        "event-twice-in-one-policy",
        "event-and-events-same",
        "star-alone",
        "exit-codes",
        "event-and-exit-code-policies",
        "pending-with-timeout",
        "pending-in-events",
    ],
)
def test_good_policies(builder: JobBuilder) -> None:
    assert check(builder) == ([], [])


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (
            job().policy("PodFailed", exit_code=1),
            {"spec.policies[0]": "give events or an exitCode, not both"},
        ),
        (
            job().policy(events=["PodFailed"], exit_code=1),
            {"spec.policies[0]": "not both"},
        ),
        (
            job().policy(action="RestartJob"),
            {"spec.policies[0]": "needs an event, events or an exitCode to match"},
        ),
        (
            job().policy(events=[], action="RestartJob"),
            {"spec.policies[0]": "needs an event"},
        ),
        (
            job().policy("PodDied"),
            {"spec.policies[0].event": "unknown event 'PodDied' (known: *, PodFailed"},
        ),
        (
            job().policy(events=["PodFailed", "OutOfSync"]),
            {"spec.policies[0].events[1]": "unknown event 'OutOfSync'"},
        ),
        (
            job().policy("CommandIssued"),
            {"spec.policies[0].event": "unknown event 'CommandIssued'"},
        ),
        (
            job().policy("PodFailed", "Explode"),
            {"spec.policies[0].action": "must be one of AbortJob, RestartJob"},
        ),
        (
            job().policy("PodFailed", "SyncJob"),
            {"spec.policies[0].action": "got 'SyncJob'"},
        ),
        (
            job().policy("PodFailed", ""),
            {"spec.policies[0].action": "got ''"},
        ),
        (
            job().policy(exit_code=2, action="Explode"),
            {"spec.policies[0].action": "got 'Explode'"},
        ),
        (
            job().policy("PodFailed").policy("PodEvicted").policy("PodFailed", "AbortJob"),
            {"spec.policies[2].event": "event PodFailed is already handled by spec.policies[0]"},
        ),
        (
            job().policy("PodFailed").policy(events=["PodEvicted", "PodFailed"]),
            {"spec.policies[1].events[1]": "already handled by spec.policies[0]"},
        ),
        (
            job().policy(exit_code=3).policy(exit_code=3, action="AbortJob"),
            {"spec.policies[1].exitCode": "exit code 3 is already handled by spec.policies[0]"},
        ),
        (
            job().policy(exit_code=0),
            {"spec.policies[0].exitCode": "0 means success"},
        ),
        (
            job().policy(exit_code=2**31),
            {"spec.policies[0].exitCode": "must be a 32-bit integer, got 2147483648"},
        ),
        (
            job().policy(exit_code=-(2**40)),
            {"spec.policies[0].exitCode": "must be a 32-bit integer"},
        ),
        (
            job().policy("*", "AbortJob").policy("PodFailed", "RestartJob"),
            {"spec.policies": "'*' matches every event: no other event may be listed beside it"},
        ),
        (
            job().policy(events=["*", "PodEvicted"], action="AbortJob"),
            {"spec.policies": "'*' matches every event"},
        ),
        (
            job().policy("PodPending", "RestartPod"),
            {"spec.policies[0].timeout": "required with PodPending: how long to wait"},
        ),
        (
            job().policy("PodPending", "RestartPod", timeout="soon"),
            {"spec.policies[0].timeout": "must be a duration such as 90s or 10m, got 'soon'"},
        ),
        (
            job().policy("PodPending", "RestartPod", timeout="10"),
            {"spec.policies[0].timeout": "must be a duration"},
        ),
        (
            job().policy("PodPending", "RestartPod", timeout="0s"),
            {"spec.policies[0].timeout": "must be positive, got '0s'"},
        ),
        (
            job().policy("PodPending", "RestartPod", timeout="-5m"),
            {"spec.policies[0].timeout": "must be positive, got '-5m'"},
        ),
        (
            job().policy("PodFailed", timeout="soon"),
            {"spec.policies[0].timeout": "must be a duration"},
        ),
    ],
    ids=[
        "event-and-exit-code",
        "events-and-exit-code",
        "neither",
        "empty-events",
        "unknown-event",
        "internal-event-in-list",
        "internal-event",
        "unknown-action",
        "sync-job-action",
        "empty-action",
        "exit-code-unknown-action",
        "duplicate-event",
        "duplicate-event-in-list",
        "duplicate-exit-code",
        "exit-code-zero",
        "exit-code-over-int32",
        "exit-code-under-int32",
        "star-with-other-policy",
        "star-with-other-event",
        "pending-without-timeout",
        "pending-bad-timeout",
        "pending-timeout-no-unit",
        "pending-zero-timeout",
        "pending-negative-timeout",
        "bad-timeout-other-event",
    ],
)
def test_each_rule_names_its_field(builder: JobBuilder, expected: dict[str, str]) -> None:
    problems, warnings = check(builder)
    found = by_path(problems)
    assert set(found) == set(expected)
    for path, reason in expected.items():
        assert reason in found[path], found[path]
    assert warnings == []


@pytest.mark.parametrize(
    "builder",
    [
        job().policy("PodFailed", "RestartJob", timeout="5m"),
        job().policy(exit_code=1, action="RestartJob", timeout="5m"),
        job().policy(events=["TaskFailed"], action="AbortJob", timeout="90s"),
    ],
    ids=["event", "exit-code", "events"],
)
def test_timeout_on_another_event_is_a_warning_not_a_problem(builder: JobBuilder) -> None:
    problems, warnings = check(builder)
    assert problems == []
    assert warnings == [
        "spec.policies[0].timeout: Lahar waits only on PodPending; this policy acts at once"
    ]


def test_every_problem_is_reported_at_once() -> None:
    builder = (
        job()
        .policy("PodFailed", exit_code=1)  # both
        .policy(action="AbortJob")  # neither
        .policy("Bogus", "Nope")  # unknown event and action
        .policy(exit_code=0)  # zero
        .policy("PodPending", "RestartPod")  # no timeout
        .policy("*")  # * beside PodFailed and PodPending
    )
    problems, _ = check(builder)
    assert [str(p).split(":")[0] for p in problems] == [
        "spec.policies[0]",
        "spec.policies[1]",
        "spec.policies[2].event",
        "spec.policies[2].action",
        "spec.policies[3].exitCode",
        "spec.policies[4].timeout",
        "spec.policies",
    ]


def test_task_policies_are_named_under_their_task() -> None:
    builder = job().policy("PodFailed", "Nope", task="w")
    parsed, _ = parse_job(builder.build())
    assert parsed is not None
    problems = list(
        policy_problems(parsed.spec.tasks[0].policies, [], "spec", "tasks", 0, "policies")
    )
    assert [p.path for p in problems] == ["spec.tasks[0].policies[0].action"]


def test_the_same_event_in_job_and_task_policies_is_allowed() -> None:
    builder = job().policy("PodFailed", "RestartJob").policy("PodFailed", "RestartTask", task="w")
    parsed, _ = parse_job(builder.build())
    assert parsed is not None
    assert list(policy_problems(parsed.spec.policies, [], "spec", "policies")) == []
    assert list(policy_problems(parsed.spec.tasks[0].policies, [], "t")) == []


def test_a_hostile_event_name_is_clipped() -> None:
    problems, _ = check(job().policy("x" * 100_000, "y" * 100_000))
    assert len(problems) == 2
    assert all(len(p.reason) < 300 for p in problems)


def test_pod_pending_among_other_events_needs_no_timeout() -> None:
    """As in Volcano, such a policy acts on its other events; PodPending never matches it."""
    problems, warnings = check(job().policy(events=["PodFailed", "PodPending"], action="AbortJob"))
    assert problems == []
    assert warnings == ["spec.policies[0].timeout: without it PodPending never matches this policy"]
