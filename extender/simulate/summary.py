"""What a simulation's outcome comes to: the figures `lahar simulate` prints per policy.

- makespan: when the last job ended (None when some never did: they are stuck);
- job wait: from a job's arrival to its first start (minAvailable pods running), mean and p95
  over the jobs that started;
- utilisation: cpu-seconds of pods whose job had started (pods that made progress), not counting
  pods later evicted or whose job a preemption restarted, ended or not (their progress was
  lost), over the cluster's cpu times the makespan (or the time the run ended); `held` counts
  every bound pod, so held minus utilisation is capacity pods of incomplete gangs sat on, or
  spent on work preemption threw away;
- fairness: Jain's index of the queues' cpu over their weights, x_i = allocated_i / weight_i,
  (sum x)^2 / (n * sum x^2) over the queues with a job waiting or running, weighted by time
  (1.0: every such queue gets cpu in proportion to its weight);
- partial gangs: jobs that had pods on nodes before their gang could start, for any time;
- preemptions: victims evicted for a waiting gang.
Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from extender.simulate.run import Interval, SimulationOutcome
from extender.simulate.series import usage


@dataclass(frozen=True)
class Summary:
    policy: str
    jobs: int
    started: int  # (the waits are over these: a job that never started has no wait)
    finished: int
    makespan: float | None
    mean_wait: float | None
    p95_wait: float | None
    utilisation: float
    held: float
    fairness: float | None
    partial_gangs: int
    preemptions: int
    seconds: float


def summarize(outcome: SimulationOutcome) -> Summary:
    records = outcome.jobs.values()
    waits = sorted(
        r.started - r.arrived for r in records if r.started is not None and r.arrived is not None
    )
    horizon = outcome.end
    held, useful = usage(outcome).core_seconds()
    area = outcome.trace.cores * horizon
    return Summary(
        policy=outcome.policy,
        jobs=len(outcome.jobs),
        started=sum(1 for r in records if r.started is not None),
        finished=sum(1 for r in records if r.finished is not None),
        makespan=None if outcome.stuck else horizon,
        mean_wait=sum(waits) / len(waits) if waits else None,
        p95_wait=waits[min(len(waits) - 1, math.ceil(0.95 * len(waits)) - 1)] if waits else None,
        utilisation=useful / area if area else 0.0,
        held=held / area if area else 0.0,
        fairness=fairness(outcome),
        partial_gangs=partial_gangs(outcome),
        preemptions=outcome.preemptions,
        seconds=outcome.seconds,
    )


def partial_gangs(outcome: SimulationOutcome) -> int:
    """Jobs with a pod on a node while their gang had not started (at any incarnation)."""
    return len({interval.job for interval in outcome.intervals if _early(interval)})


def _early(interval: Interval) -> bool:
    """The pod sat on its node for a while before its job started (or its job never did)."""
    if interval.useful_from is None:
        return interval.end is None or interval.end > interval.start
    return interval.useful_from > interval.start


def fairness(outcome: SimulationOutcome) -> float | None:
    """Jain's index over queue weights, time-weighted to where the run ended (None: never two
    queues wanting cpu)."""
    weights = {queue.name: queue.weight for queue in outcome.trace.queues}
    events: list[tuple[float, int, str, float]] = []  # (time, kind, queue, amount)
    for interval in outcome.intervals:
        events.append((interval.start, 0, interval.queue, interval.cpu))
        if interval.end is not None:
            events.append((interval.end, 0, interval.queue, -interval.cpu))
    for record in outcome.jobs.values():
        if record.arrived is not None:
            events.append((record.arrived, 1, record.job.queue, 1))
        if record.finished is not None:
            events.append((record.finished, 1, record.job.queue, -1))
    events.sort(key=lambda e: e[0])
    allocated: dict[str, float] = {}
    active: dict[str, int] = {}
    total = weighted = previous = 0.0

    def advance(to: float) -> None:
        """Count the index as it stood from the last event to `to`."""
        nonlocal total, weighted, previous
        if to > previous:
            index = _jain(allocated, active, weights)
            if index is not None:
                weighted += index * (to - previous)
                total += to - previous
            previous = to

    for when, kind, queue, amount in events:
        advance(when)
        if kind == 0:
            allocated[queue] = allocated.get(queue, 0.0) + amount
        else:
            active[queue] = active.get(queue, 0) + int(amount)
    advance(outcome.end)  # (stuck jobs wait on to where the run ended)
    return weighted / total if total else None


def _jain(
    allocated: dict[str, float], active: dict[str, int], weights: dict[str, int]
) -> float | None:
    shares = [allocated.get(q, 0.0) / weights.get(q, 1) for q, n in active.items() if n > 0]
    if len(shares) < 2 or not any(shares):
        return None
    return sum(shares) ** 2 / (len(shares) * sum(x * x for x in shares))
