"""Step series over time from a simulation's pod intervals, for the report's plots. Pure.

`usage(outcome)` gives, at every moment something changed, the cpu of bound pods and the cpu of
pods whose job had started (making progress that was kept: not evicted later);
`queue_cpu(outcome)` the cpu each queue's pods used; `tree_cpu(outcome)` the same for every
queue of the trace's tree, a parent's the sum of its children's (its whole subtree), with the
queues per tree level (level 1: the top-level queues, level 2 their children...), their paths
(`root/ml/team-a`, as the core names them) and weights. Each value holds from its moment until
the next.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from extender.api.scheduling import DEFAULT_QUEUE
from extender.simulate import world
from extender.simulate.run import SimulationOutcome
from extender.simulate.trace import Trace


@dataclass(frozen=True)
class Usage:
    times: list[float]
    bound: list[float]  # cores of every bound pod
    useful: list[float]  # cores of the pods whose job had started

    def core_seconds(self) -> tuple[float, float]:
        """(bound, useful) summed over time: each value times how long it lasted."""
        spans = [after - before for before, after in zip(self.times, self.times[1:], strict=False)]
        return (
            sum(v * span for v, span in zip(self.bound, spans, strict=False)),
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
    times, bound, useful = [0.0], [0.0], [0.0]
    for moment in sorted(changes):
        delta_bound, delta_useful = changes[moment]
        times.append(moment)
        bound.append(bound[-1] + delta_bound)
        useful.append(useful[-1] + delta_useful)
    return Usage(times, [max(0.0, v) for v in bound], [max(0.0, v) for v in useful])


def queue_cpu(outcome: SimulationOutcome) -> tuple[list[float], dict[str, list[float]]]:
    """(moments, per queue the cores its pods used from each moment on)."""
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


@dataclass(frozen=True)
class TreeCpu:
    times: list[float]
    cores: dict[str, list[float]]  # per queue, parents included, the cores used from each moment
    levels: list[list[str]]  # the queues of each level, the top level first, in the trace's order
    paths: dict[str, str]  # queue -> root/ml/team-a
    weights: dict[str, int]


def tree_queues(trace: Trace) -> tuple[list[list[str]], dict[str, str], dict[str, int]]:
    """(the queues per level, their paths, their weights): the trace's queues, and `default`
    when a job or a queue names it."""
    listed = {queue.name: queue for queue in trace.queues}
    used = {job.queue for job in trace.jobs} | set(trace.children)
    made = {q.metadata.name: q for q in world.queues(trace)}
    tree = trace.tree
    names = [*listed] + (
        [DEFAULT_QUEUE] if DEFAULT_QUEUE not in listed and DEFAULT_QUEUE in used else []
    )
    levels: list[list[str]] = []
    for name in names:
        depth = tree.depth(name)
        while len(levels) < depth:
            levels.append([])
        levels[depth - 1].append(name)
    paths = {name: tree.path(name) for name in names}
    weights = {name: made[name].spec.weight for name in names}
    return levels, paths, weights


def tree_cpu(outcome: SimulationOutcome) -> TreeCpu:
    levels, paths, weights = tree_queues(outcome.trace)
    times, leaves = queue_cpu(outcome)
    zeros = [0.0] * len(times)
    cores: dict[str, list[float]] = {}
    for level in reversed(levels):  # children before parents
        for name in level:
            below = [cores[child] for child in outcome.trace.children.get(name, ())]
            own = leaves.get(name, zeros)
            cores[name] = [sum(values) for values in zip(own, *below, strict=True)]
    ordered = {name: cores[name] for level in levels for name in level}
    return TreeCpu(times, ordered, levels, paths, weights)
