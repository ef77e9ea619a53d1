"""How `lahar whatif` says its answer: a few lines a person reads, then what the estimate rests
on and what it cannot know (the snapshot's limits, where run times came from), and the same as
JSON for scripts; and runs compared (`simulate.comparison`) as tables: each queue's share per
hour, each pending gang's start, each run's evictions.

A time is said as a span from the snapshot (`4m`, `1.5h`), a range as `2m-9m`; an open range (a
gang whose run time no source gives) as `4m or later`. The limits are always said: an estimate
that hides them reads as a promise. Pure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from extender.simulate.cluster_gangs import FOREVER
from extender.simulate.comparison import Comparison
from extender.simulate.from_cluster import Limits
from extender.simulate.trace import Trace
from extender.simulate.whatif import Answer, Delay

SHOWN = 5  # names listed before "and N more"


def span(seconds: float) -> str:
    """A time from now as a person says it: `45s`, `12m`, `1.5h`, `2.1d`."""
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f}m"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def spans(low: float, high: float) -> str:
    if high >= FOREVER or math.isinf(high):
        return f"{span(low)} or later"
    if span(low) == span(high):
        return span(low)
    return f"{span(low)}-{span(high)}"


def lines(answer: Answer) -> list[str]:
    """The answer: when and where it starts (or why not), whom it evicts, whom it delays."""
    where = ", ".join(_listed(list(answer.nodes)))
    if answer.hyper_node is not None:
        where += f" (HyperNode {answer.hyper_node})"
    said: list[str] = []
    if answer.start is None:
        if answer.stuck:
            said.append(f"Job {answer.job} would not start with this policy:")
        else:
            said.append(
                f"Job {answer.job} does not start within {span(answer.horizon)} "
                "(the horizon; --hours plays further):"
            )
        said += [f"  {reason}" for reason in answer.reasons]
    elif answer.now:
        said.append(f"Job {answer.job} starts now, on {where}")
    else:
        assert answer.low is not None
        assert answer.high is not None
        between = spans(answer.low, answer.high)
        within = "" if between == span(answer.start) else f" ({between})"
        said.append(f"Job {answer.job} starts in about {span(answer.start)}{within}, on {where}")
        if answer.blockers:
            said.append("  after these end (run time source, estimated end):")
            said += [f"    {b.job}  ({b.source}, {spans(b.low, b.high)})" for b in answer.blockers]
    if answer.victims:
        said.append(f"evicts: {', '.join(_listed(list(answer.victims)))}")
    if answer.knock_on:
        said.append(f"and, as a result, evicts: {', '.join(_listed(list(answer.knock_on)))}")
    said += [_delayed(delay, answer.horizon) for delay in answer.delays]
    return said


def _delayed(delay: Delay, horizon: float) -> str:
    before = span(delay.before) if delay.before is not None else "-"
    if delay.after is None:
        return f"delays {delay.job}: does not start within {span(horizon)}, instead of in {before}"
    if delay.before is not None and span(delay.after) == before:  # (rounded alike)
        return (
            f"delays {delay.job}: starts {delay.after - delay.before:.0f}s later, in about {before}"
        )
    return f"delays {delay.job}: starts in {span(delay.after)} instead of {before}"


def notes(trace: Trace, limits: Limits | None, policy_from: str) -> list[str]:
    """What the estimate rests on and what it cannot know."""
    when = f"taken at {trace.taken_at}" if trace.taken_at else "replayed from a file"
    said = [
        f"An estimate: the cluster's snapshot ({when}) played under the policy of "
        f"{policy_from}. It assumes no other Job arrives, no node fails or joins, and that "
        "gangs run as long as their run-time sources say.",
    ]
    sources = Counter(
        _source(job.run_time.source) for job in trace.jobs if job.run_time is not None
    )
    if sources:
        counted = ", ".join(f"{count} {source}" for source, count in sorted(sources.items()))
        said.append(f"Run times of the gangs in the snapshot: {counted}.")
    unknown = [
        job.key
        for job in trace.jobs
        if job.run_time is not None and job.run_time.source == "unknown" and job.in_progress
    ]
    if unknown:
        said.append(
            f"Running gangs with no run time keep their nodes to the end: "
            f"{', '.join(_listed(unknown))} (set the annotation lahar.io/expected-run-time, or "
            "--default-run-time)."
        )
    if limits is not None:
        if limits.pending_elsewhere:
            said.append(
                f"Not played: {len(limits.pending_elsewhere)} pending pods of other schedulers "
                f"({', '.join(_listed(limits.pending_elsewhere))})."
            )
        if limits.outside_gangs:
            said.append(
                f"{limits.outside_gangs} running pods outside any gang (DaemonSets, other "
                "schedulers) keep what they take."
            )
        said += [f"Left out: {gone}." for gone in limits.left_out]
        said += [f"Not modelled: {dropped}." for dropped in limits.dropped]
        said += [f"Run time of {skipped}." for skipped in limits.skipped]
    return said


def as_json(
    answer: Answer,
    trace: Trace,
    limits: Limits | None,
    policy_from: str,
    *,
    read: Sequence[str] = (),
) -> dict[str, Any]:
    """The answer for scripts; `read`: notes on how the cluster was read, put first."""
    return {
        "takenAt": trace.taken_at,
        "job": answer.job,
        "start": answer.start,
        "startRange": None if answer.start is None else [answer.low, _finite(answer.high)],
        "now": answer.now,
        "nodes": list(answer.nodes),
        "hyperNode": answer.hyper_node,
        "after": [
            {"job": b.job, "source": b.source, "ends": [b.low, _finite(b.high)]}
            for b in answer.blockers
        ],
        "evicts": list(answer.victims),
        "alsoEvicts": list(answer.knock_on),
        "delays": [{"job": d.job, "before": d.before, "after": d.after} for d in answer.delays],
        "neverWithThisPolicy": answer.stuck,
        "reasons": list(answer.reasons),
        "horizon": answer.horizon,
        "notes": [*read, *notes(trace, limits, policy_from)],
    }


def _finite(value: float | None) -> float | None:
    return None if value is None or value >= FOREVER or math.isinf(value) else value


def _source(source: str) -> str:
    return "history" if source.startswith("history") else source


def _listed(names: Sequence[str]) -> list[str]:
    if len(names) <= SHOWN:
        return list(names)
    return [*names[:SHOWN], f"and {len(names) - SHOWN} more"]


def share_table(comparison: Comparison) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Per queue and run, its share of the cluster's cpu in each hour played."""
    hours = tuple(f"{hour + 1}H" for hour in range(comparison.hours))
    rows = [
        (queue, run, *(f"{share:.0%}" for share in by_run[run]))
        for queue, by_run in comparison.shares.items()
        for run in comparison.runs
    ]
    return ("QUEUE", "RUN", *hours), rows


def start_table(comparison: Comparison) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Per gang pending at the snapshot, when it starts in each run."""
    rows = [
        (job, *(span(s) if (s := starts[run]) is not None else "-" for run in comparison.runs))
        for job, starts in comparison.starts.items()
    ]
    return ("PENDING GANG", *(f"STARTS ({run})" for run in comparison.runs)), rows


def eviction_lines(comparison: Comparison) -> list[str]:
    """Each run's evictions by name, or that it has none."""
    said = []
    for run in comparison.runs:
        evictions = comparison.evictions[run]
        if not evictions:
            said.append(f"{run}: no evictions")
            continue
        for eviction in evictions:
            said.append(
                f"{run}: at {span(eviction.at)}, {eviction.preemptor} evicts "
                f"{', '.join(_listed(list(eviction.victims)))}"
            )
    return said


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "runs": list(comparison.runs),
        "sharePerHour": {queue: dict(by_run) for queue, by_run in comparison.shares.items()},
        "levelShares": {
            run: [
                {"queue": s.path, "weight": s.weight, "fair": s.fair, "share": s.share}
                for s in shares
            ]
            for run, shares in comparison.levels.items()
        },
        "starts": comparison.starts,
        "evictions": {
            run: [{"at": e.at, "preemptor": e.preemptor, "victims": list(e.victims)} for e in ev]
            for run, ev in comparison.evictions.items()
        },
    }
