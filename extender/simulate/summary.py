"""What a simulation's outcome comes to: the figures `lahar simulate` prints per policy.

- makespan: when the last job ended (None when some never did: they are stuck);
- job wait: from a job's arrival to its first start (minAvailable pods running), mean and p95
  over the jobs that started;
- utilisation: cpu-seconds of pods whose job had started (pods that made progress), not counting
  pods later evicted or whose job a preemption restarted, ended or not (their progress was
  lost), over the cluster's cpu times the makespan (or the time the run ended);
- held (the report's HELD column, named as it prints): the same over the cpu-seconds of every
  bound pod, started or not, so held minus utilisation is capacity pods of incomplete gangs sat
  on, or spent on work preemption threw away;
- fairness: Jain's index of the queues' cpu over their weights, x_i = allocated_i / weight_i,
  (sum x)^2 / (n * sum x^2) over the queues with a job waiting or running, weighted by time
  (1.0: every such queue gets cpu in proportion to its weight); when the queues form a tree, a
  leaf queue's weight is the part of the cluster the tree gives it, the product down its path of
  weight over the weights of the siblings with work (a flat trace's index is unchanged: Jain's
  index does not change when every x_i is scaled alike);
- partial gangs: jobs that had pods on nodes before their gang could start, for any time;
- preemptions: victims evicted for a waiting gang;
- shares per level, for a trace whose queues form a tree (none for a flat one, whose report
  stays as it was): for each parent (`root` for the top level) with at least two children that
  have jobs in the trace, each child's share of the cpu-seconds its parent's subtree used while
  the parent was *saturated*, every such child with a job of its subtree waiting to start
  (arrived or restarted, not yet running), against its weight over its siblings' weights. While
  each wants more than it has the core shares the parent's cpu by weight, so the two should
  come close; a capability below the weighted share keeps a queue below it;
- fragmentation, for a trace with a network topology (none without one): the gangs placed under
  more than one lowest-tier HyperNode, and the hard ones placed beyond their tier
  (`fragmentation`);
- the pool, for a trace with an autoscaled pool (none without one): node-hours bought and idle
  waiting for the rest of a gang, nodes added, peak (`node_hours`). With a pool, the cluster's
  cpu that utilisation is taken over is what it had at each moment: the starting nodes, and
  each added node from joining to removal.
Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from extender.api.scheduling import ROOT
from extender.simulate.fragmentation import Fragmentation, fragmentation
from extender.simulate.node_hours import PoolFigures, capacity, pool_figures
from extender.simulate.run import Interval, SimulationOutcome
from extender.simulate.series import tree_queues, usage
from extender.simulate.trace import Trace


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
    held: float  # HELD: cpu-seconds of every bound pod over the cluster's (see the docstring)
    fairness: float | None
    partial_gangs: int
    preemptions: int
    seconds: float
    levels: tuple[LevelShare, ...] = ()  # (a flat trace: none)
    fragmentation: Fragmentation | None = None  # (a trace with no topology: none)
    pool: PoolFigures | None = None  # (a trace with no autoscaled pool: none)


@dataclass(frozen=True)
class LevelShare:
    """A queue's share of its parent's cpu while the parent was saturated, against its weight's
    share."""

    level: int  # 1: a top-level queue
    path: str
    parent: str  # its parent's path (root at the top level)
    weight: int
    fair: float  # weight / the weights of the siblings with jobs (its own included)
    share: float | None  # None: the parent's subtree used no cpu while saturated (or never was)
    saturated: float  # seconds the parent was saturated


def summarize(outcome: SimulationOutcome) -> Summary:
    records = outcome.jobs.values()
    waits = sorted(  # (a job resumed running waited before the run: not a wait of the run's)
        r.started - r.arrived
        for r in records
        if r.started is not None and r.arrived is not None and not r.resumed
    )
    horizon = outcome.end
    bound, useful = usage(outcome).core_seconds()
    area = capacity(outcome, horizon)
    return Summary(
        policy=outcome.policy,
        jobs=len(outcome.jobs),
        started=sum(1 for r in records if r.started is not None),
        finished=sum(1 for r in records if r.finished is not None),
        makespan=None if outcome.stuck else horizon,
        mean_wait=sum(waits) / len(waits) if waits else None,
        p95_wait=waits[min(len(waits) - 1, math.ceil(0.95 * len(waits)) - 1)] if waits else None,
        utilisation=useful / area if area else 0.0,
        held=bound / area if area else 0.0,
        fairness=fairness(outcome),
        partial_gangs=partial_gangs(outcome),
        preemptions=outcome.preemptions,
        seconds=outcome.seconds,
        levels=level_shares(outcome) if outcome.trace.hierarchical else (),
        fragmentation=fragmentation(outcome),
        pool=pool_figures(outcome),
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
    weights: dict[str, float] = {queue.name: queue.weight for queue in outcome.trace.queues}
    flat = not outcome.trace.hierarchical
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
            shares = weights if flat else _tree_weights(outcome.trace, active, weights)
            index = _jain(allocated, active, shares)
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


def _tree_weights(
    trace: Trace, active: dict[str, int], weights: dict[str, float]
) -> dict[str, float]:
    """Per leaf queue with work, the part of the cluster the tree gives it while the queues with
    work are those: at each level, its weight over those of the siblings with work below them."""
    wanting = with_ancestors({name for name, jobs in active.items() if jobs > 0}, trace)
    siblings: dict[str | None, float] = {}
    for name in wanting:
        parent = trace.parents.get(name)
        siblings[parent] = siblings.get(parent, 0.0) + weights.get(name, 1)
    fractions = {}
    for name in wanting - set(trace.children):
        fraction, at = 1.0, name
        while True:
            parent = trace.parents.get(at)
            fraction *= weights.get(at, 1) / siblings[parent]
            if parent is None:
                break
            at = parent
        fractions[name] = fraction
    return fractions


def _jain(
    allocated: dict[str, float], active: dict[str, int], weights: dict[str, float]
) -> float | None:
    shares = [allocated.get(q, 0.0) / weights.get(q, 1) for q, n in active.items() if n > 0]
    if len(shares) < 2 or not any(shares):
        return None
    return sum(shares) ** 2 / (len(shares) * sum(x * x for x in shares))


def level_shares(outcome: SimulationOutcome) -> tuple[LevelShare, ...]:
    """Per tree level, top first, each queue's share of its parent's cpu while the parent was
    saturated (see the module docstring), for the parents with two children or more in play."""
    trace = outcome.trace
    levels, paths, weights = tree_queues(trace)
    in_play = with_ancestors({job.queue for job in trace.jobs}, trace)
    families: dict[str, list[str]] = {}  # parent (ROOT at the top) -> its children in play
    for level in levels:
        for name in level:
            if name in in_play:
                families.setdefault(trace.parents.get(name, ROOT), []).append(name)
    families = {parent: kids for parent, kids in families.items() if len(kids) > 1}
    used, saturated = _used_while_saturated(outcome, families, list(paths))
    shares = []
    for number, level in enumerate(levels, start=1):
        for name in level:
            parent = trace.parents.get(name, ROOT)
            kids = families.get(parent, [])
            if name not in kids:
                continue
            whole = sum(used[kid] for kid in kids)
            shares.append(
                LevelShare(
                    level=number,
                    path=paths[name],
                    parent=paths.get(parent, ROOT),
                    weight=weights[name],
                    fair=weights[name] / sum(weights[kid] for kid in kids),
                    share=used[name] / whole if whole > 0 else None,
                    saturated=saturated[parent],
                )
            )
    return tuple(shares)


def _used_while_saturated(
    outcome: SimulationOutcome, families: dict[str, list[str]], queues: list[str]
) -> tuple[dict[str, float], dict[str, float]]:
    """(per queue the core-seconds its subtree used while its parent was saturated, per parent
    the seconds it was), in one sweep over the pods' and the waits' moments."""
    tree = outcome.trace.tree
    lineage = {name: [name, *tree.ancestors(name)] for name in queues}
    events: list[tuple[float, str, int, float]] = []  # (time, leaf, waiting jobs, cores)
    for interval in outcome.intervals:
        end = interval.end if interval.end is not None else outcome.end
        events.append((interval.start, interval.queue, 0, interval.cpu / 1000))
        events.append((end, interval.queue, 0, -interval.cpu / 1000))
    for record in outcome.jobs.values():
        for wait in record.waits:
            until = wait.until if wait.until is not None else outcome.end
            events.append((wait.since, record.job.queue, 1, 0.0))
            events.append((until, record.job.queue, -1, 0.0))
    events.sort(key=lambda event: event[0])
    events.append((outcome.end, "", 0, 0.0))
    cores = dict.fromkeys(queues, 0.0)
    waiting = dict.fromkeys(queues, 0)
    used = dict.fromkeys(queues, 0.0)
    saturated = dict.fromkeys(families, 0.0)
    previous = 0.0
    for when, leaf, jobs, amount in events:
        if when > previous:  # the figures stood from `previous` to `when`
            for parent, kids in families.items():
                if all(waiting[kid] for kid in kids):
                    saturated[parent] += when - previous
                    for kid in kids:
                        used[kid] += cores[kid] * (when - previous)
            previous = when
        for name in lineage.get(leaf, ()):
            cores[name] += amount
            waiting[name] += jobs
    return used, saturated


def with_ancestors(names: set[str], trace: Trace) -> set[str]:
    """The queues named and every queue above them."""
    return {above for name in names for above in trace.tree.chain(name)}
