"""The table `lahar simulate` prints: one row per policy, in kubectl's plain column style."""

from __future__ import annotations

from extender.simulate.metrics import Summary

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


def row(summary: Summary) -> tuple[str, ...]:
    makespan = _seconds(summary.makespan) if summary.makespan is not None else "never"
    return (
        summary.policy,
        str(summary.jobs),
        str(summary.finished),
        makespan,
        _seconds(summary.mean_wait),
        _seconds(summary.p95_wait),
        f"{summary.utilisation:.0%}",
        f"{summary.held:.0%}",
        f"{summary.fairness:.2f}" if summary.fairness is not None else "-",
        str(summary.partial_gangs),
        str(summary.preemptions),
        f"{summary.seconds:.1f}s",
    )


def table(summaries: list[Summary]) -> str:
    rows = [HEADERS, *(row(s) for s in summaries)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    return "\n".join(
        "   ".join(cell.ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip()
        for r in rows
    )
