"""The columns of the table `lahar simulate` prints (and its HTML report shows): one row per
policy. The CLI lays them out in kubectl's style. `progress` words how far a run got."""

from __future__ import annotations

from collections.abc import Sequence

from extender.simulate.run import Progress
from extender.simulate.summary import Summary

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
