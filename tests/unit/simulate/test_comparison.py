"""Runs of one snapshot side by side: shares per hour, the starts of pending gangs, evictions."""

from __future__ import annotations

import pytest

from extender.cli.serve_cmd import default_policy
from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.simulate.comparison import compare
from extender.simulate.queue_edits import apply, parse_edit
from extender.simulate.run import SimulationOutcome, simulate
from extender.simulate.trace import Trace
from tests.builders import make_trace, make_trace_job

HORIZON = 2 * 3600.0


def backlog() -> Trace:
    """Two sibling queues under ml, each with more 1-cpu jobs than the 16 cpus run in an hour."""
    trace = (
        make_trace()
        .nodes(2, cpu="8", memory="64Gi")
        .queue("ml")
        .queue("qa", parent="ml")
        .queue("qb", parent="ml")
    )
    for queue in ("qa", "qb"):
        for number in range(80):
            trace.job(make_trace_job(f"{queue}-{number}").set(queue=queue).task(duration=600))
    return trace.model()


def played(trace: Trace, edited: Trace) -> list[SimulationOutcome]:
    policy = load_policy(default_policy(), REGISTRY)
    return [
        simulate(trace, policy, "current", horizon=HORIZON),
        simulate(edited, policy, "new", horizon=HORIZON),
    ]


def test_a_weight_change_moves_the_shares_as_the_weights_say() -> None:
    trace = backlog()
    compared = compare(played(trace, apply(trace, [parse_edit("qa.weight=3")])), HORIZON)
    shares = {
        run: {share.path.rsplit("/", 1)[-1]: share for share in levels}
        for run, levels in compared.levels.items()
    }
    assert shares["current"]["qa"].fair == pytest.approx(0.5)
    assert shares["new"]["qa"].fair == pytest.approx(0.75)
    assert shares["current"]["qa"].share == pytest.approx(0.5, abs=0.05)
    assert shares["new"]["qa"].share == pytest.approx(0.75, abs=0.05)
    # The first hour, both queues busy: qa holds about half the cluster, then about three quarters.
    assert compared.shares["qa"]["current"][0] == pytest.approx(0.5, abs=0.06)
    assert compared.shares["qa"]["new"][0] == pytest.approx(0.75, abs=0.06)
    assert compared.hours == 2
    assert compared.runs == ("current", "new")


def test_the_starts_of_pending_gangs_per_run_and_those_that_moved() -> None:
    trace = backlog()
    compared = compare(played(trace, apply(trace, [parse_edit("qa.weight=3")])), HORIZON)
    assert set(compared.starts) == {job.key for job in trace.jobs}
    moved = compared.moved()
    later = [job for job in moved if job.startswith("qb-")]
    earlier = [job for job in moved if job.startswith("qa-")]
    assert later, "qb's jobs wait longer once qa weighs three times as much"
    assert earlier, "and qa's start sooner"
    for job in later:
        before, after = compared.starts[job]["current"], compared.starts[job]["new"]
        assert before is not None
        assert after is None or after > before
    for job in earlier:
        before, after = compared.starts[job]["current"], compared.starts[job]["new"]
        assert before is not None
        assert after is not None
        assert after < before


def test_a_run_with_no_evictions_says_so() -> None:
    trace = backlog()
    compared = compare(played(trace, trace), HORIZON)
    assert compared.evictions == {"current": (), "new": ()}
    assert compared.moved() == []
