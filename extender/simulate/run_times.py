"""How long a running gang runs in all, as a range with the source it came from: what a replay of
the live cluster needs to end each running gang in virtual time.

`estimate` takes what is known of one gang (`RunFacts`) and answers an `Estimate` of its TOTAL run
time, from its start (the simulator subtracts what has elapsed: `Estimate.remaining`). The sources,
in order, the first that gives a value deciding:

1. the `lahar.io/expected-run-time` annotation (`45m` or `30m-1h`); a bad one is skipped and named
   in `problem`;
2. Volcano's `spec.runningEstimate` on the Job: a point;
3. the history of finished runs (`api.run_times.RunHistory`): the owner's own runs, else its
   queue's; expected the median, the range p10..p90 (fewer than 3 runs: min..2*max, a handful of
   runs says little about the spread);
4. the default the user gave (`--default-run-time`): a point P means P/2..2P, a range is as given;
5. the deadline alone (`activeDeadlineSeconds`): between what has elapsed and the deadline;
6. nothing: "unknown", an infinite run time (the gang holds what it holds past any horizon).

A deadline is a hard end (the kubelet or the Job controller kills the gang then), so it caps
every source's range. What has elapsed is a floor: a gang past its expected time is expected
halfway between now and the top of its range. A gang that has run longer than the top of its
range is `overdue`: it may end any moment, and its range becomes what has elapsed (nothing
remains). Whatever the inputs,
low <= expected <= high. Pure.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import NamedTuple

from extender.api.run_times import RunHistory, parse_run_time

ANNOTATION = "annotation"
RUNNING_ESTIMATE = "runningEstimate"
DEFAULT = "default"
DEADLINE = "deadline"
UNKNOWN = "unknown"
FEW_RUNS = 3  # fewer runs than this give min..2*max instead of p10..p90


@dataclass(frozen=True)
class RunFacts:
    """What is known of one running gang. Times are seconds; `elapsed` and `deadline` count from
    the gang's start (a deadline is `activeDeadlineSeconds`, moved to the gang's start when it is
    the batch Job's); `annotation` is the raw `lahar.io/expected-run-time` text;
    `running_estimate` is Volcano's `spec.runningEstimate` in seconds."""

    owner: str
    queue: str
    elapsed: float
    deadline: float | None = None
    annotation: str | None = None
    running_estimate: float | None = None

    def __post_init__(self) -> None:
        for name in ("elapsed", "deadline", "running_estimate"):
            value = getattr(self, name)
            if value is not None and math.isnan(value):
                raise ValueError(f"run facts of {self.owner}: {name} is not a number")


@dataclass(frozen=True)
class Estimate:
    """A gang's total run time in seconds, from its start: low <= expected <= high (infinite when
    unknown); `samples` the finished runs it rests on (history only); `problem` what was wrong
    with a source that was skipped."""

    low: float
    expected: float
    high: float
    source: str
    samples: int = 0
    overdue: bool = False
    problem: str | None = None

    def remaining(self, elapsed: float) -> tuple[float, float, float]:
        """(low, expected, high) seconds left once `elapsed` seconds have run."""
        return (
            max(0.0, self.low - elapsed),
            max(0.0, self.expected - elapsed),
            max(0.0, self.high - elapsed),
        )


class _Range(NamedTuple):
    low: float
    expected: float
    high: float
    source: str
    samples: int = 0


def estimate(facts: RunFacts, history: RunHistory, default: tuple[float, float] | None) -> Estimate:
    """The gang's total run time from the first source that gives one (see the module's
    docstring). A `default` that is no range of run times (negative, low above high) is a
    ValueError: it was the user's to check."""
    elapsed = max(0.0, facts.elapsed)  # a start stamped ahead of this clock has just begun
    deadline = None if facts.deadline is None else max(0.0, facts.deadline)
    problems: list[str] = []
    found = (
        _annotated(facts.annotation, problems)
        or _declared(facts.running_estimate, problems)
        or _recorded(facts, history)
        or _defaulted(default)
        or _bounded(elapsed, deadline)
    )
    problem = "; ".join(problems) or None
    if found is None:
        return Estimate(math.inf, math.inf, math.inf, UNKNOWN, problem=problem)
    low, expected, high = found.low, found.expected, found.high
    if deadline is not None:
        low, expected, high = min(low, deadline), min(expected, deadline), min(high, deadline)
    # (quantiles and medians are computed apart: rounding may put one a hair outside the other)
    low, high = min(low, expected), max(high, expected)
    if elapsed > high:
        return Estimate(elapsed, elapsed, elapsed, found.source, found.samples, True, problem)
    # Known to run this long at least: past its expected time, it is expected halfway between
    # now and the top of its range (not at once: that would read as ending now).
    low = max(low, elapsed)
    if elapsed > expected:
        expected = _middle(elapsed, high)
    return Estimate(low, expected, high, found.source, found.samples, False, problem)


def _annotated(text: str | None, problems: list[str]) -> _Range | None:
    if text is None:
        return None
    try:
        low, high = parse_run_time(text)
    except ValueError as error:
        problems.append(f"{error}: skipped")
        return None
    return _Range(low, _middle(low, high), high, ANNOTATION)


def _declared(seconds: float | None, problems: list[str]) -> _Range | None:
    if seconds is None:
        return None
    if seconds < 0:
        problems.append(f"{RUNNING_ESTIMATE} {seconds:g}s is negative: skipped")
        return None
    return _Range(seconds, seconds, seconds, RUNNING_ESTIMATE)


def _recorded(facts: RunFacts, history: RunHistory) -> _Range | None:
    runs, whose = history.samples(facts.owner, facts.queue)
    if whose is None:
        return None
    count = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
    of = f"of {facts.owner}" if whose == "owner" else f"in queue {facts.queue}"
    source = f"history ({count} {of})"
    expected = statistics.median(runs)
    if len(runs) < FEW_RUNS:
        return _Range(min(runs), expected, 2 * max(runs), source, len(runs))
    cuts = statistics.quantiles(runs, n=10, method="inclusive")
    return _Range(cuts[0], expected, cuts[-1], source, len(runs))


def _defaulted(default: tuple[float, float] | None) -> _Range | None:
    if default is None:
        return None
    low, high = default
    if not 0 <= low <= high:
        raise ValueError(f"default run time {low:g}s-{high:g}s is no range of run times")
    if low == high:
        return _Range(low / 2, low, 2 * low, DEFAULT)
    return _Range(low, _middle(low, high), high, DEFAULT)


def _bounded(elapsed: float, deadline: float | None) -> _Range | None:
    if deadline is None:
        return None
    low = min(elapsed, deadline)
    return _Range(low, _middle(low, deadline), deadline, DEADLINE)


def _middle(low: float, high: float) -> float:
    if low == high:  # (infinite ends included)
        return low
    return low + (high - low) / 2  # (not (low + high) / 2: that overflows near the largest float)
