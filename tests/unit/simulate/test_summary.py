"""The figures of an outcome, on outcomes made by hand: what each counts, to the second."""

from __future__ import annotations

import pytest

from extender.simulate.run import Interval, SimulatedJob, SimulationOutcome, Wait
from extender.simulate.summary import fairness, level_shares, summarize
from extender.simulate.trace import parse_trace


def _stuck_outcome(end: float) -> SimulationOutcome:
    """Queues q and r, weight 1 each; job a (q) holds 2 cpu from 0, job b (r) waits from 0;
    neither ever ends, and the run was watched until `end`."""
    task = {"name": "w", "replicas": 1, "cpu": "2", "memory": "1Gi", "duration": 10}
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "4", "memory": "8Gi"}],
            "queues": [{"name": "q"}, {"name": "r"}],
            "jobs": [
                {"name": "a", "queue": "q", "tasks": [task]},
                {"name": "b", "queue": "r", "tasks": [task]},
            ],
        }
    )
    jobs = {job.name: SimulatedJob(job, arrived=0.0) for job in trace.jobs}
    intervals = [Interval("node-0", "a", "q", 0, 2000, start=0.0)]
    return SimulationOutcome("p", trace, jobs, intervals, 0, end, 0, 0.0)


@pytest.mark.parametrize("end", [100.0, 3600.0])
def test_fairness_counts_the_time_stuck_jobs_wait_until_the_run_ends(end: float) -> None:
    # q holds 2 cpu per weight, r nothing, all the way to the end: Jain's index 0.5.
    assert fairness(_stuck_outcome(end)) == pytest.approx(0.5)


def _tree_outcome() -> SimulationOutcome:
    """ml (weight 1) over a (3) and b (1), and web (1). a1 holds 4 cpu, b1 2 cpu, w1 2 cpu until
    50 s; a2 waits all along, b2 until 60 s, w2 until 40 s; the run ends at 100 s."""
    task = {"name": "w", "replicas": 1, "cpu": "2", "memory": "1Gi", "duration": 10}
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "8", "memory": "8Gi"}],
            "queues": [
                {"name": "ml", "weight": 1},
                {"name": "a", "weight": 3, "parent": "ml"},
                {"name": "b", "parent": "ml"},
                {"name": "web"},
            ],
            "jobs": [
                {"name": f"{queue}{n}", "queue": queue, "tasks": [task]}
                for queue in ("a", "b", "web")
                for n in (1, 2)
            ],
        }
    )
    waits = {"a2": 100.0, "b2": 60.0, "web2": 40.0}
    jobs = {
        job.name: SimulatedJob(
            job, arrived=0.0, waits=[Wait(0.0, waits[job.name])] if job.name in waits else []
        )
        for job in trace.jobs
    }
    intervals = [
        Interval("node-0", "a1", "a", 0, 4000, start=0.0, end=100.0),
        Interval("node-0", "b1", "b", 0, 2000, start=0.0, end=100.0),
        Interval("node-0", "web1", "web", 0, 2000, start=0.0, end=50.0),
    ]
    return SimulationOutcome("p", trace, jobs, intervals, 0, 100.0, 0, 0.0)


def test_each_parent_shares_its_cpu_while_every_child_has_a_job_waiting() -> None:
    shares = {s.path: s for s in level_shares(_tree_outcome())}
    assert list(shares) == ["root/ml", "root/web", "root/ml/a", "root/ml/b"]
    # root is saturated while a2 (under ml) and web2 wait: 0-40 s, ml 6 cpu, web 2.
    assert shares["root/ml"].saturated == shares["root/web"].saturated == 40.0
    assert shares["root/ml"].share == pytest.approx(0.75)
    assert shares["root/web"].share == pytest.approx(0.25)
    assert (shares["root/ml"].fair, shares["root/ml"].level, shares["root/ml"].parent) == (
        0.5,
        1,
        "root",
    )
    # ml is saturated while a2 and b2 wait: 0-60 s, a 4 cpu, b 2.
    assert shares["root/ml/a"].saturated == 60.0
    assert shares["root/ml/a"].share == pytest.approx(2 / 3)
    assert shares["root/ml/b"].share == pytest.approx(1 / 3)
    assert (shares["root/ml/a"].fair, shares["root/ml/a"].parent) == (0.75, "root/ml")


def test_a_flat_trace_has_no_shares_per_level() -> None:
    assert summarize(_stuck_outcome(100.0)).levels == ()


def test_fairness_in_a_tree_weighs_each_leaf_by_its_part_of_the_tree() -> None:
    # Every queue has work all along: web deserves 1/2, a 1/2 * 3/4, b 1/2 * 1/4.
    def jain(xs: list[float]) -> float:
        return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))

    until_50 = jain([4 / (3 / 8), 2 / (1 / 8), 2 / (1 / 2)])
    after = jain([4 / (3 / 8), 2 / (1 / 8), 0.0])
    assert fairness(_tree_outcome()) == pytest.approx((until_50 + after) / 2)
