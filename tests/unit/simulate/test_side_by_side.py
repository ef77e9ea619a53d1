"""Policies played side by side in worker processes: the outcomes of playing them in turn."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate.defaults import stock_policy
from extender.simulate.run import Progress, SimulationOutcome, simulate
from extender.simulate.side_by_side import WorkerDied, cores, play
from extender.simulate.synthetic import generate
from extender.simulate.trace import Trace, parse_trace

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"


@pytest.fixture(scope="module")
def policies() -> list[tuple[str, Policy]]:
    return [("lahar", load_policy(POLICY, REGISTRY)), ("stock", stock_policy())]


@pytest.fixture(scope="module")
def trace() -> Trace:
    return parse_trace(generate(60, 6))


def _what_happened(outcome: SimulationOutcome) -> tuple[Any, ...]:
    """Everything an outcome says but the wall time it took."""
    return (
        outcome.policy,
        outcome.jobs,
        outcome.intervals,
        outcome.preemptions,
        outcome.end,
        outcome.attempts,
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_side_by_side_is_what_playing_them_in_turn_gives(
    policies: list[tuple[str, Policy]], trace: Trace, workers: int
) -> None:
    in_turn = [simulate(trace, policy, name) for name, policy in policies]
    played = play(trace, policies, workers=workers)
    assert [_what_happened(o) for o in played] == [_what_happened(o) for o in in_turn]
    assert [o.policy for o in played] == ["lahar", "stock"]  # in the policies' order


def test_the_workers_progress_reaches_the_caller(
    policies: list[tuple[str, Policy]], trace: Trace
) -> None:
    reports: list[Progress] = []
    play(trace, policies, on_progress=reports.append, progress_every=0.0, workers=2)
    assert {r.policy for r in reports} == {"lahar", "stock"}
    last = {r.policy: r for r in reports}
    assert all(r.jobs == 60 for r in last.values())


def test_each_runs_last_report_says_where_it_ended(
    policies: list[tuple[str, Policy]], trace: Trace
) -> None:
    """However soon a run ends after starting, its last report (where it ended) arrives."""
    reports: list[Progress] = []
    outcomes = play(trace, policies, on_progress=reports.append, progress_every=3600, workers=2)
    ended = [(o.policy, len(o.jobs) - len(o.stuck)) for o in outcomes]
    assert sorted((r.policy, r.finished) for r in reports) == sorted(ended)
    assert ("lahar", 60) in ended


def test_a_workers_error_is_raised_here(policies: list[tuple[str, Policy]], trace: Trace) -> None:
    broken: Any = object()  # not a policy: the simulation fails in its worker
    with pytest.raises(AttributeError, match="no attribute"):
        play(trace, [policies[0], ("broken", broken)], workers=2)


def test_cores_counts_what_this_process_may_use() -> None:
    assert cores() >= 1


class _Killer:
    """Pickled like any object; in the worker, the simulation's first look at it ends the
    process, as the kernel's OOM killer would."""

    @property
    def filters(self) -> Any:
        os._exit(1)


def test_a_worker_that_dies_names_the_runs_it_stopped(
    policies: list[tuple[str, Policy]], trace: Trace
) -> None:
    killer: Any = _Killer()
    with pytest.raises(WorkerDied, match=r"ended abruptly .* while playing policies stock, doomed"):
        play(trace, [policies[1], ("doomed", killer)], workers=2)
