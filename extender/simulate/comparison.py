"""Runs of one snapshot compared: what `lahar whatif --policy new.yaml` or `--queue ml.weight=4`
shows beside the cluster as it is.

For each run (the first is the one things are compared against):
- each queue's share of the cluster's cpu in each hour of the horizon (the cores its pods used,
  averaged over the hour, over the cluster's cores: `series.queue_cpu`), and, where queues share
  a parent, each one's share of what the parent used while saturated against the share its
  weight gives it (`summary.level_shares`, the fair-share maths the engine follows);
- each gang pending at the snapshot: when it starts (None: not within the horizon);
- the evictions, by name: who evicted whom, when.
Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from extender.simulate.run import Eviction, SimulationOutcome
from extender.simulate.series import queue_cpu
from extender.simulate.summary import LevelShare, level_shares

HOUR = 3600.0


@dataclass(frozen=True)
class Comparison:
    runs: tuple[str, ...]
    hours: int
    shares: dict[str, dict[str, tuple[float, ...]]]  # queue -> run -> share per hour
    levels: dict[str, tuple[LevelShare, ...]]  # run -> level shares
    starts: dict[str, dict[str, float | None]]  # pending gang -> run -> its start
    evictions: dict[str, tuple[Eviction, ...]]  # run -> its evictions

    def moved(self) -> list[str]:
        """The pending gangs whose start differs between the first run and another."""
        first = self.runs[0]
        return [
            job
            for job, starts in self.starts.items()
            if any(_differs(starts[first], starts[run]) for run in self.runs[1:])
        ]


def compare(outcomes: Sequence[SimulationOutcome], horizon: float) -> Comparison:
    hours = max(1, math.ceil(horizon / HOUR))
    runs = tuple(outcome.policy for outcome in outcomes)
    shares: dict[str, dict[str, tuple[float, ...]]] = {}
    for outcome in outcomes:
        cores = outcome.trace.cores
        times, series = queue_cpu(outcome)
        for queue, used in series.items():
            per_hour = tuple(
                _average(times, used, hour * HOUR, (hour + 1) * HOUR) / cores if cores else 0.0
                for hour in range(hours)
            )
            shares.setdefault(queue, {})[outcome.policy] = per_hour
    for by_run in shares.values():
        for run in runs:
            by_run.setdefault(run, (0.0,) * hours)
    pending = [job.key for job in outcomes[0].trace.jobs if not job.in_progress]
    starts = {
        key: {o.policy: o.jobs[key].started if key in o.jobs else None for o in outcomes}
        for key in pending
    }
    return Comparison(
        runs=runs,
        hours=hours,
        shares=dict(sorted(shares.items())),
        levels={outcome.policy: level_shares(outcome) for outcome in outcomes},
        starts=starts,
        evictions={outcome.policy: tuple(outcome.evictions) for outcome in outcomes},
    )


def _average(times: list[float], values: list[float], start: float, end: float) -> float:
    """The mean of a step series (each value holds from its moment to the next) over
    [start, end)."""
    total = 0.0
    for index, moment in enumerate(times):
        following = times[index + 1] if index + 1 < len(times) else math.inf
        overlap = min(following, end) - max(moment, start)
        if overlap > 0:
            total += values[index] * overlap
    return total / (end - start)


def _differs(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return abs(a - b) > 1.0
