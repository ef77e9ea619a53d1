"""Step series over time from a simulation's pod intervals, for the report's plots. Pure.

`usage(outcome)` gives, at every moment something changed, the cpu held by bound pods and the
cpu of pods whose job had started (making progress that was kept: not evicted later);
`queue_cpu(outcome)` the cpu each queue's pods held. Each value holds from its moment until the
next.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from extender.simulate.run import SimulationOutcome


@dataclass(frozen=True)
class Usage:
    times: list[float]
    held: list[float]  # cores
    useful: list[float]  # cores

    def core_seconds(self) -> tuple[float, float]:
        """(held, useful) summed over time: each value times how long it held."""
        spans = [after - before for before, after in zip(self.times, self.times[1:], strict=False)]
        return (
            sum(v * span for v, span in zip(self.held, spans, strict=False)),
            sum(v * span for v, span in zip(self.useful, spans, strict=False)),
        )


def usage(outcome: SimulationOutcome) -> Usage:
    changes: dict[float, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for interval in outcome.intervals:
        end = interval.end if interval.end is not None else outcome.end
        cores = interval.cpu / 1000
        changes[interval.start][0] += cores
        changes[end][0] -= cores
        if interval.useful_from is not None and not interval.evicted:
            changes[interval.useful_from][1] += cores
            changes[end][1] -= cores
    times, held, useful = [0.0], [0.0], [0.0]
    for moment in sorted(changes):
        delta_held, delta_useful = changes[moment]
        times.append(moment)
        held.append(held[-1] + delta_held)
        useful.append(useful[-1] + delta_useful)
    return Usage(times, [max(0.0, v) for v in held], [max(0.0, v) for v in useful])


def queue_cpu(outcome: SimulationOutcome) -> tuple[list[float], dict[str, list[float]]]:
    """(moments, per queue the cores its pods held from each moment on)."""
    changes: dict[float, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    names = sorted({interval.queue for interval in outcome.intervals})
    for interval in outcome.intervals:
        end = interval.end if interval.end is not None else outcome.end
        changes[interval.start][interval.queue] += interval.cpu / 1000
        changes[end][interval.queue] -= interval.cpu / 1000
    times = [0.0]
    series = {name: [0.0] for name in names}
    for moment in sorted(changes):
        times.append(moment)
        for name in names:
            series[name].append(max(0.0, series[name][-1] + changes[moment].get(name, 0.0)))
    return times, series
