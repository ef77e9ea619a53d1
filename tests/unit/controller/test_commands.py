"""Volcano Commands (`vcctl job suspend|resume`): the action a Command asks for, in the phase
machine, and the oldest Command of a job taken first from the store."""

from __future__ import annotations

import pytest

from extender.api.batch import Action, Command
from extender.controller.lifecycle import plan
from extender.controller.reconcile import command_action
from extender.controller.store import JobStore
from tests.builders import make_job, make_job_pod

NOW = 1_767_225_600.0


def running_job(phase: str = "Running", version: int = 0):  # type: ignore[no-untyped-def]
    return make_job("a").task("w", 2).status(phase=phase, version=version).model()


def test_abort_command_beats_the_policies_and_keeps_finished_pods() -> None:
    job = make_job("a").task("w", 2).policy("PodFailed", "RestartJob").status(phase="Running")
    model = job.model()
    pods = {
        p.name: p
        for p in (
            make_job_pod(model, "w", 0).phase("Failed", exit_code=1).model(),
            make_job_pod(model, "w", 1).model(),
        )
    }
    result = plan(model, pods, [], NOW, Action.ABORT_JOB)
    assert (result.phase, result.status.state.reason) == ("Aborting", "AbortJob")
    assert [p.name for p in result.delete] == ["a-w-1"]
    assert result.status.retry_count == 0


def test_resume_restarts_an_aborted_job_at_the_next_version_without_a_retry() -> None:
    model = running_job("Aborted", version=2)
    kept = make_job_pod(model, "w", 0).phase("Succeeded").model()
    result = plan(model, {kept.name: kept}, [], NOW, Action.RESUME_JOB)
    assert (result.phase, result.status.version, result.status.retry_count) == ("Restarting", 3, 0)
    assert [p.name for p in result.delete] == ["a-w-0"]  # the new version makes it anew


@pytest.mark.parametrize(
    ("phase", "command"),
    [
        ("Completed", Action.RESUME_JOB),
        ("Running", Action.RESUME_JOB),
        ("Failed", Action.ABORT_JOB),
    ],
    ids=["finished jobs ignore commands", "resume of a running job syncs", "failed stays failed"],
)
def test_commands_that_do_not_apply_change_no_phase(phase: str, command: Action) -> None:
    model = running_job(phase)
    pods = {p.name: p for p in (make_job_pod(model, "w", i).model() for i in range(2))}
    result = plan(model, pods, [], NOW, command)
    assert result.phase == phase


@pytest.mark.parametrize("command", [Action.ABORT_JOB, Action.TERMINATE_JOB, None])
def test_evictions_go_back_only_when_a_command_decided(command: Action | None) -> None:
    """A Command taken before the policies leaves the evictions for the next pass; a pass the
    policies decided (no Command, or one naming an earlier job: no action) has used them."""
    model = make_job("a").task("w", 2).policy("PodEvicted", "RestartTask").status(phase="Running")
    job = model.model()
    pods = {p.name: p for p in (make_job_pod(job, "w", i).model() for i in range(2))}
    evicted = [pods["a-w-0"]]
    result = plan(job, pods, evicted, NOW, command)
    assert result.decision.commanded is (command is not None)
    assert result.decision.action is (command or Action.RESTART_TASK)


def _command(name: str, created: str, job: str = "a") -> Command:
    return Command.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "action": "AbortJob",
            "target": {"kind": "Job", "name": job},
        }
    )


def test_the_oldest_command_comes_first_and_a_deletion_pokes_the_job() -> None:
    store = JobStore()
    poked: list[str] = []
    store.on_change = poked.append
    late, early = (
        _command("late", "2026-01-01T00:00:09Z"),
        _command("early", "2026-01-01T00:00:01Z"),
    )
    store.replace_commands([late, early, _command("other", "2026-01-01T00:00:00Z", job="b")])
    assert store.next_command("default/a") == early
    store.delete_command(early)
    assert store.next_command("default/a") == late and poked[-1] == "default/a"
    store.delete_command(late)
    assert store.next_command("default/a") is None


def test_a_command_for_something_else_than_a_job_is_not_kept() -> None:
    store = JobStore()
    stray = Command.model_validate(
        {
            "metadata": {"name": "x", "namespace": "default"},
            "target": {"kind": "Queue", "name": "q"},
        }
    )
    store.upsert_command(stray)
    assert store.commands == {}


def test_suspend_and_resume_are_no_retries_however_often() -> None:
    """maxRetry 1, suspended and resumed three times: it runs again each time, retryCount 0."""
    job = make_job("a").task("w", 2).max_retry(1).status(phase="Running").model()
    for cycle in range(3):
        running = {p.name: p for p in (make_job_pod(job, "w", i).model() for i in range(2))}
        suspended = plan(job, running, [], NOW, Action.ABORT_JOB)
        assert (suspended.phase, len(suspended.delete)) == ("Aborting", 2)
        job = job.model_copy(update={"status": suspended.status})
        job = job.model_copy(update={"status": plan(job, {}, [], NOW).status})
        assert job.status.state.phase == "Aborted"
        resumed = plan(job, {}, [], NOW, Action.RESUME_JOB)
        job = job.model_copy(update={"status": resumed.status})
        job = job.model_copy(update={"status": plan(job, {}, [], NOW).status})
        assert job.status.state.phase == "Pending"
        assert len(plan(job, {}, [], NOW).create) == 2
        again = {p.name: p for p in (make_job_pod(job, "w", i).model() for i in range(2))}
        job = job.model_copy(update={"status": plan(job, again, [], NOW).status})
        assert job.status.state.phase == "Running"
        assert (job.status.retry_count, job.status.version) == (0, cycle + 1)


def test_a_suspend_while_restarting_is_taken() -> None:
    """Sent right after a resume (the job still Restarting): the job is suspended, not resumed."""
    model = running_job("Restarting", version=1)
    old = make_job_pod(model, "w", 0).version(0).terminating().model()
    result = plan(model, {old.name: old}, [], NOW, Action.ABORT_JOB)
    assert (result.phase, result.status.retry_count) == ("Aborting", 0)
    after = model.model_copy(update={"status": result.status})
    assert plan(after, {}, [], NOW).phase == "Aborted"


@pytest.mark.parametrize(
    ("target_uid", "expected"),
    [("uid-a", Action.ABORT_JOB), ("", Action.ABORT_JOB), ("uid-of-an-earlier-a", None)],
    ids=["for this job", "naming no uid (made by hand)", "for an earlier job of the same name"],
)
def test_a_command_acts_on_the_job_it_names(target_uid: str, expected: Action | None) -> None:
    command = _command("c", "2026-01-01T00:00:00Z")
    target = command.target.model_copy(update={"uid": target_uid})  # type: ignore[union-attr]
    assert command_action(running_job(), command.model_copy(update={"target": target})) == expected
