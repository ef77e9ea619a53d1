"""What an autoscaled pool cost in one run: the figures `lahar simulate` prints beside its table
when the trace declares a pool (`trace.Autoscaling`), from what the autoscaler bought
(`autoscaler.PoolRecord`) and the pods' intervals. Pure.

- bought: node-hours of the nodes added, each from when it was bought (a cloud bills a machine
  from when it is asked for; it joins `provisioningDelay` later) until it was removed (a node
  still there when the run ended: until the autoscaler would have removed it);
- idle waiting: node-hours of added nodes, between joining and removal, bought and spent on
  gangs that could not run yet, in parts of a node by cpu: at each moment a node counts the cpu
  of its pods whose job's current incarnation has not started (*taken*: capacity members take
  while the rest of their gang comes), and, while a job it was bought for waits to start
  (arrived or restarted, not running yet), also its free cpu (*unused*: capacity bought for a
  gang not placed yet), each over the node's cpu. A node wholly taken by waiting members, or
  empty while its gang waits, counts in full; a node shared with started jobs, in part. Free
  cpu while no job the node was bought for waits (its gang went elsewhere, or finished) is plain
  idle, not counted: the autoscaler's scale-down is for it;
- added: nodes bought; peak: the most nodes in the pool at once (the starting ones and those
  bought and not removed yet, joined or not).

`capacity` gives the cluster's core-seconds up to a moment (the starting nodes, and each added
node from joining to removal), what utilisation is taken over; `node_counts` the pool's nodes
over time, for the report's plot.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from extender.simulate.autoscaler import AddedNode
from extender.simulate.run import Interval, SimulationOutcome

HOUR = 3600.0


@dataclass(frozen=True)
class PoolFigures:
    starting: int
    max_nodes: int
    bought: float  # node-seconds
    taken: float  # node-seconds of cpu taken by pods of jobs not started
    unused: float  # node-seconds of cpu free while a job the node was bought for waited
    added: int
    peak: int
    requests: int  # ProvisioningRequests made

    @property
    def idle_waiting(self) -> float:
        """Node-seconds idle waiting for the rest of a gang, taken or unused."""
        return self.taken + self.unused

    @property
    def bought_hours(self) -> float:
        return self.bought / HOUR

    @property
    def idle_waiting_hours(self) -> float:
        return self.idle_waiting / HOUR

    @property
    def idle_share(self) -> float | None:
        """The part of the node-hours bought spent idle waiting (None: none bought)."""
        return self.idle_waiting / self.bought if self.bought else None


def pool_figures(outcome: SimulationOutcome) -> PoolFigures | None:
    """The figures of the module's docstring; None for a run on a trace without a pool."""
    pool = outcome.pool
    if pool is None:
        return None
    on_node: dict[str, list[Interval]] = defaultdict(list)
    for interval in outcome.intervals:
        on_node[interval.node].append(interval)
    taken = unused = 0.0
    node_cpu = pool.cores * 1000  # millicores
    for node in pool.nodes:
        waiting = _idle_waiting(outcome, node, on_node.get(node.name, []), node_cpu)
        taken += waiting[0]
        unused += waiting[1]
    return PoolFigures(
        starting=pool.starting,
        max_nodes=pool.max_nodes,
        bought=sum(node.removed - node.bought for node in pool.nodes),
        taken=taken,
        unused=unused,
        added=len(pool.nodes),
        peak=max(node_counts(outcome)[1], default=pool.starting),
        requests=pool.requests,
    )


def _idle_waiting(
    outcome: SimulationOutcome, node: AddedNode, intervals: list[Interval], node_cpu: float
) -> tuple[float, float]:
    """(taken, unused) node-seconds the node was idle waiting, in one sweep over its moments."""
    events: list[tuple[float, int, int, int]] = []  # (time, pods' cpu, started cpu, waiting jobs)
    for interval in intervals:
        end = interval.end if interval.end is not None else outcome.end
        events += [(interval.start, interval.cpu, 0, 0), (end, -interval.cpu, 0, 0)]
        useful = interval.useful_from
        if useful is not None and useful < end:
            events += [(useful, 0, interval.cpu, 0), (end, 0, -interval.cpu, 0)]
    for name in node.jobs:
        for wait in outcome.jobs[name].waits:
            until = wait.until if wait.until is not None else outcome.end
            if until > wait.since:
                events += [(wait.since, 0, 0, 1), (until, 0, 0, -1)]
    events.sort(key=lambda event: event[0])
    events.append((node.removed, 0, 0, 0))
    cpu = started = waiting = 0
    taken = unused = 0.0
    previous = node.joined
    for when, d_cpu, d_started, d_waiting in events:
        moment = min(max(when, node.joined), node.removed)
        if moment > previous:  # the figures stood from `previous` to `moment`
            span = (moment - previous) / node_cpu
            taken += (cpu - started) * span
            if waiting:
                unused += max(node_cpu - cpu, 0.0) * span
            previous = moment
        cpu += d_cpu
        started += d_started
        waiting += d_waiting
    return taken, unused


def node_counts(outcome: SimulationOutcome) -> tuple[list[float], list[int], list[int]]:
    """(moments, nodes in the pool from each moment on, of them joined): the starting nodes and
    those bought and not removed, and of those the ones that joined. Empty without a pool."""
    pool = outcome.pool
    if pool is None:
        return [], [], []
    changes: dict[float, list[int]] = defaultdict(lambda: [0, 0])
    for node in pool.nodes:
        changes[node.bought][0] += 1
        changes[node.removed][0] -= 1
        if node.joined < node.removed:
            changes[node.joined][1] += 1
            changes[node.removed][1] -= 1
    times, billed, joined = [0.0], [pool.starting], [pool.starting]
    for moment in sorted(changes):
        bought, present = changes[moment]
        times.append(moment)
        billed.append(billed[-1] + bought)
        joined.append(joined[-1] + present)
    return times, billed, joined


def capacity(outcome: SimulationOutcome, horizon: float) -> float:
    """The cluster's core-seconds from 0 to `horizon`: the trace's nodes all along, and each
    added node from joining to removal."""
    total = outcome.trace.cores * horizon
    pool = outcome.pool
    if pool is not None:
        for node in pool.nodes:
            total += pool.cores * max(0.0, min(node.removed, horizon) - node.joined)
    return total
