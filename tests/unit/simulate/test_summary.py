"""The figures of an outcome, on outcomes made by hand: what each counts, to the second."""

from __future__ import annotations

import pytest

from extender.simulate.run import Interval, SimulatedJob, SimulationOutcome
from extender.simulate.summary import fairness
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
