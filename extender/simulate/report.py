"""The columns of the table `lahar simulate` prints (and its HTML report shows): one row per
policy. The CLI lays them out in kubectl's style. `progress` words how far a run got.

A trace whose queues form a tree gets a second table, `level_table`: a row per queue with
siblings, level by level (1: the top-level queues), its path, weight and FAIR (its weight over
its siblings'), then per policy its share of its parent's cpu while the parent was saturated
(`summary.level_shares`); `level_notes` says for how long each parent was, per policy.

A trace with a network topology gets `topology_table`: a row per policy, the gangs placed, those
spread under more than one lowest-tier HyperNode, the gangs asking for a topology and how many
and what part of them were spread, the hard ones and those placed beyond their tier
(`fragmentation`); `topology_notes` says what the columns count.

A trace with an autoscaled pool gets `pool_table`: a row per run, the node-hours bought and idle
waiting for the rest of a gang (and their part of those bought), the nodes added, the most in
the pool at once, the ProvisioningRequests made, and the jobs' figures beside them (done,
makespan, waits); `pool_notes` says what the columns count (`node_hours`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from extender.simulate.fragmentation import Fragmentation
from extender.simulate.node_hours import PoolFigures
from extender.simulate.run import Progress
from extender.simulate.summary import LevelShare, Summary

HEADERS = (
    "POLICY",
    "JOBS",
    "DONE",
    "MAKESPAN",
    "MEAN WAIT",
    "P95 WAIT",
    "UTIL",
    "HELD",
    "FAIRNESS",
    "PARTIAL",
    "PREEMPT",
    "TOOK",
)


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    if value >= 60:
        return f"{value / 60:.1f}m"
    return f"{value:.0f}s"


PARTIAL_WAITS = "*"  # marks waits over only the jobs that started


def row(summary: Summary) -> tuple[str, ...]:
    makespan = _seconds(summary.makespan) if summary.makespan is not None else "never"
    mark = PARTIAL_WAITS if _partial_waits(summary) else ""
    return (
        summary.policy,
        str(summary.jobs),
        str(summary.finished),
        makespan,
        _seconds(summary.mean_wait) + mark,
        _seconds(summary.p95_wait) + mark,
        f"{summary.utilisation:.0%}",
        f"{summary.held:.0%}",
        f"{summary.fairness:.2f}" if summary.fairness is not None else "-",
        str(summary.partial_gangs),
        str(summary.preemptions),
        f"{summary.seconds:.1f}s",
    )


def notes(summaries: Sequence[Summary]) -> list[str]:
    """What the table's marks mean, for the rows that carry them."""
    return [
        f"{PARTIAL_WAITS} {s.policy}: the waits are over the {s.started} jobs that started; "
        f"{s.jobs - s.started} never did (they wait still, longer than any shown)"
        for s in summaries
        if _partial_waits(s)
    ]


def _partial_waits(summary: Summary) -> bool:
    """Its waits are over some of its jobs only: others never started."""
    return 0 < summary.started < summary.jobs


def progress(report: Progress, *, brief: bool = False) -> str:
    """One line: how far a run got, for a terminal to overwrite as it goes (`brief`: a part of
    one, beside other runs')."""
    if brief:
        return f"{report.policy}: {_seconds(report.now)}, {report.finished}/{report.jobs} done"
    waiting = report.arrived - report.started
    return (
        f"{report.policy}: {_seconds(report.now)} simulated, {report.finished} of {report.jobs} "
        f"jobs done, {waiting} waiting to start ({report.wall:.0f}s)"
    )


LEVEL_HEADERS = ("LEVEL", "QUEUE", "WEIGHT", "FAIR")


def level_table(summaries: Sequence[Summary]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(headers, rows) of the shares per level; no rows for a flat trace."""
    headers = LEVEL_HEADERS + tuple(s.policy.upper() for s in summaries)
    by_path: dict[str, dict[str, LevelShare]] = {}
    for summary in summaries:
        for share in summary.levels:
            by_path.setdefault(share.path, {})[summary.policy] = share
    rows = []
    for path, per_policy in by_path.items():
        shares = list(per_policy.values())
        rows.append(
            (
                str(shares[0].level),
                path,
                _runs(str(share.weight) for share in shares),
                _runs(_percent(share.fair) for share in shares),
                *(_percent(_share(per_policy.get(s.policy))) for s in summaries),
            )
        )
    return headers, rows


def _runs(values: Iterable[str]) -> str:
    """One value when the runs agree (`2`), else each in the runs' order (`1 -> 4`: a run with
    the queues edited beside one without)."""
    return " -> ".join(dict.fromkeys(values))


def level_notes(summaries: Sequence[Summary]) -> list[str]:
    """How long each parent was saturated in each run, for the shares' table."""
    if not any(s.levels for s in summaries):
        return []
    spans = []
    for summary in summaries:
        parents = {share.parent: share.saturated for share in summary.levels}
        spans.append(
            f"{summary.policy} "
            + ", ".join(f"{parent} {_seconds(span)}" for parent, span in parents.items())
        )
    return [
        "SHARE: of the parent's cpu-seconds while each of its children had a job waiting to "
        "start; FAIR: weight over the siblings' weights. Saturated: " + "; ".join(spans)
    ]


def _share(share: LevelShare | None) -> float | None:
    return None if share is None else share.share


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


TOPOLOGY_HEADERS = ("POLICY", "GANGS", "SPREAD", "ASKING", "ASKING SPREAD", "HARD", "BEYOND")


def topology_table(summaries: Sequence[Summary]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(headers, rows) of the gangs' placement in the network; no rows without a topology."""
    rows = []
    for summary in summaries:
        figures = summary.fragmentation
        if figures is not None:
            rows.append((summary.policy, *_fragmentation(figures)))
    return TOPOLOGY_HEADERS, rows


def _fragmentation(figures: Fragmentation) -> tuple[str, ...]:
    share = figures.asking_share
    asking_spread = str(figures.asking_spread) + (f" ({share:.0%})" if share is not None else "")
    return (
        str(figures.gangs),
        str(figures.spread),
        str(figures.asking),
        asking_spread,
        str(figures.hard),
        str(figures.beyond),
    )


def topology_notes(summaries: Sequence[Summary]) -> list[str]:
    """What the topology table's columns count, when it has rows."""
    if not any(s.fragmentation is not None for s in summaries):
        return []
    return [
        "GANGS: jobs of two pods or more placed; SPREAD: of those, with pods under more than one "
        "lowest-tier HyperNode; ASKING: gangs with a networkTopology (the job's or a "
        "partition's); HARD: with a hard one; BEYOND: hard gangs (or partitions) placed outside "
        "the tier they allow"
    ]


POOL_HEADERS = (
    "POLICY",
    "NODE-HOURS",
    "IDLE WAITING",
    "ADDED",
    "PEAK",
    "REQUESTS",
    "DONE",
    "MAKESPAN",
    "MEAN WAIT",
    "P95 WAIT",
)


def pool_table(summaries: Sequence[Summary]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(headers, rows) of what the autoscaled pool cost each run; no rows without a pool."""
    rows = []
    for summary in summaries:
        figures = summary.pool
        if figures is not None:
            mark = PARTIAL_WAITS if _partial_waits(summary) else ""
            rows.append(
                (
                    summary.policy,
                    *_pool(figures),
                    f"{summary.finished}/{summary.jobs}",
                    _seconds(summary.makespan) if summary.makespan is not None else "never",
                    _seconds(summary.mean_wait) + mark,
                    _seconds(summary.p95_wait) + mark,
                )
            )
    return POOL_HEADERS, rows


def _pool(figures: PoolFigures) -> tuple[str, ...]:
    share = figures.idle_share
    idle = f"{figures.idle_waiting_hours:.2f}" + (f" ({share:.0%})" if share is not None else "")
    return (
        f"{figures.bought_hours:.2f}",
        idle,
        str(figures.added),
        str(figures.peak),
        str(figures.requests) if figures.requests else "-",
    )


def pool_notes(summaries: Sequence[Summary]) -> list[str]:
    """What the pool table's columns count, when it has rows."""
    pools = [s.pool for s in summaries if s.pool is not None]
    if not pools:
        return []
    pool = pools[0]
    return [
        f"The pool: {pool.starting} starting nodes, up to {pool.max_nodes} added. NODE-HOURS: "
        "of the nodes added, from bought to removed; IDLE WAITING: of those, after joining, "
        "the part of a node's cpu taken by pods of jobs not started yet, and its free cpu while "
        "a job it was bought for waited to start (and their part of NODE-HOURS); ADDED: nodes "
        "bought; PEAK: the most nodes in the pool at once; REQUESTS: ProvisioningRequests "
        "made; DONE: jobs finished"
    ]
