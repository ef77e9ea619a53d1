"""A running gang's total run time: which source decides, how a deadline caps it, what history
gives, what an overdue gang becomes, and that low <= expected <= high whatever the facts."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.api.run_times import RunHistory
from extender.simulate.run_times import Estimate, RunFacts, estimate

T0 = 1_900_000_000.0
HOUR = 3600.0


def _facts(
    *,
    elapsed: float = 0.0,
    deadline: float | None = None,
    annotation: str | None = None,
    running_estimate: float | None = None,
    owner: str = "ns/train",
    queue: str = "ml",
) -> RunFacts:
    return RunFacts(owner, queue, elapsed, deadline, annotation, running_estimate)


def _history(owner: str, queue: str, *runs: float) -> RunHistory:
    history = RunHistory()
    for n, seconds in enumerate(runs):
        history = history.add(owner, queue, seconds, T0 + n)
    return history


OWN = _history("ns/train", "ml", 600, 1200, 1800, 2400, 3000)  # median 1800, p10 840, p90 2760
QUEUE = _history("ns/other", "ml", 300, 900)
NONE = RunHistory()


@pytest.mark.parametrize(
    ("facts", "history", "default", "expected"),
    [
        (
            _facts(annotation="30m-1h", running_estimate=60, deadline=2 * HOUR),
            OWN,
            (HOUR, HOUR),
            (1800, 2700, 3600, "annotation"),
        ),
        (_facts(annotation="45m"), OWN, None, (2700, 2700, 2700, "annotation")),
        (_facts(running_estimate=900), OWN, (HOUR, HOUR), (900, 900, 900, "runningEstimate")),
        (_facts(), OWN, (HOUR, HOUR), (840, 1800, 2760, "history (5 runs of ns/train)")),
        (_facts(), QUEUE, (HOUR, HOUR), (300, 600, 1800, "history (2 runs in queue ml)")),
        (_facts(), NONE, (HOUR, HOUR), (1800, 3600, 7200, "default")),
        (_facts(), NONE, (1800, 7200), (1800, 4500, 7200, "default")),
        (_facts(elapsed=600, deadline=HOUR), NONE, None, (600, 2100, 3600, "deadline")),
        (_facts(elapsed=600), NONE, None, (math.inf, math.inf, math.inf, "unknown")),
    ],
    ids=[
        "annotation before all",
        "annotation point",
        "runningEstimate before history",
        "own history before default",
        "the queue's history",
        "default point",
        "default range",
        "deadline alone",
        "nothing",
    ],
)
def test_the_first_source_that_gives_a_value_decides(
    facts: RunFacts,
    history: RunHistory,
    default: tuple[float, float] | None,
    expected: tuple[float, float, float, str],
) -> None:
    found = estimate(facts, history, default)
    assert (found.low, found.expected, found.high, found.source) == expected
    assert not found.overdue
    assert found.problem is None


@pytest.mark.parametrize(
    ("facts", "history", "expected"),
    [
        (_facts(annotation="30m-2h", deadline=HOUR), NONE, (1800, 3600, 3600)),
        (_facts(annotation="2h-3h", deadline=HOUR), NONE, (3600, 3600, 3600)),
        (_facts(running_estimate=2 * HOUR, deadline=HOUR), NONE, (3600, 3600, 3600)),
        (_facts(deadline=2000), OWN, (840, 1800, 2000)),
        (_facts(annotation="10m", deadline=HOUR), NONE, (600, 600, 600)),
    ],
    ids=["caps high", "caps the whole range", "caps a point", "caps history", "above: no change"],
)
def test_a_deadline_caps_every_source(
    facts: RunFacts, history: RunHistory, expected: tuple[float, float, float]
) -> None:
    found = estimate(facts, history, None)
    assert (found.low, found.expected, found.high) == expected


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ((600.0,), (600, 600, 1200)),
        ((600.0, 900.0), (600, 750, 1800)),
        ((600.0, 900.0, 1200.0), (660, 900, 1140)),
        (tuple(float(n) for n in range(1, 11)), (1.9, 5.5, 9.1)),
    ],
    ids=["one run: min..2*max", "two runs: min..2*max", "three runs: p10..p90", "ten runs"],
)
def test_history_gives_the_median_in_p10_to_p90_widened_when_runs_are_few(
    runs: tuple[float, ...], expected: tuple[float, float, float]
) -> None:
    found = estimate(_facts(), _history("ns/train", "ml", *runs), None)
    assert (found.low, found.expected, found.high) == pytest.approx(expected)
    assert found.samples == len(runs)
    plural = "s" if len(runs) > 1 else ""
    assert found.source == f"history ({len(runs)} run{plural} of ns/train)"


@pytest.mark.parametrize(
    ("facts", "history", "expected_source"),
    [
        (_facts(elapsed=2 * HOUR, annotation="30m-1h"), NONE, "annotation"),
        (_facts(elapsed=4000, running_estimate=HOUR), NONE, "runningEstimate"),
        (_facts(elapsed=4000), OWN, "history (5 runs of ns/train)"),
        (_facts(elapsed=5000, deadline=HOUR), NONE, "deadline"),
    ],
)
def test_a_gang_past_its_range_is_overdue_and_may_end_any_moment(
    facts: RunFacts, history: RunHistory, expected_source: str
) -> None:
    found = estimate(facts, history, None)
    assert found.overdue
    assert (found.low, found.expected, found.high) == (facts.elapsed,) * 3
    assert found.remaining(facts.elapsed) == (0.0, 0.0, 0.0)
    assert found.source == expected_source


@pytest.mark.parametrize(
    ("facts", "expected_source", "problem"),
    [
        (
            _facts(annotation="1d", running_estimate=900),
            "runningEstimate",
            "lahar.io/expected-run-time '1d': invalid duration '1d'",
        ),
        (_facts(annotation="1h-30m"), "history (5 runs of ns/train)", "above the upper end"),
        (_facts(running_estimate=-5), "history (5 runs of ns/train)", "runningEstimate -5s"),
        (
            _facts(annotation="", running_estimate=-5),
            "history (5 runs of ns/train)",
            "is empty",
        ),
    ],
)
def test_a_bad_source_is_skipped_and_named(
    facts: RunFacts, expected_source: str, problem: str
) -> None:
    found = estimate(facts, OWN, None)
    assert found.source == expected_source
    assert found.problem is not None
    assert problem in found.problem


def test_remaining_is_what_is_left_of_each_end() -> None:
    found = estimate(_facts(elapsed=1000, annotation="30m-1h"), NONE, None)
    assert found.remaining(1000) == (800.0, 1700.0, 2600.0)
    unknown = estimate(_facts(elapsed=1000), NONE, None)
    assert unknown.remaining(1000) == (math.inf, math.inf, math.inf)


def test_a_start_ahead_of_this_clock_counts_as_just_started() -> None:
    found = estimate(_facts(elapsed=-30, deadline=HOUR), NONE, None)
    assert (found.low, found.high, found.overdue) == (0.0, HOUR, False)


@pytest.mark.parametrize("default", [(-1.0, 60.0), (120.0, 60.0), (math.nan, math.nan)])
def test_a_default_that_is_no_range_is_refused(default: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match="default run time"):
        estimate(_facts(), NONE, default)


@pytest.mark.parametrize("field", ["elapsed", "deadline", "running_estimate"])
def test_facts_that_are_not_numbers_are_refused(field: str) -> None:
    values = {"elapsed": 0.0, "deadline": None, "running_estimate": None, field: math.nan}
    with pytest.raises(ValueError, match=field):
        RunFacts("ns/train", "ml", **values)


SECONDS = st.floats(min_value=-HOUR, max_value=1e12, allow_nan=False) | st.just(math.inf)
ANNOTATIONS = st.none() | st.sampled_from(["45m", "30m-1h", "0", "1h-30m", "1d", "", "-5m", "2h"])
RUNS = st.lists(st.floats(min_value=0, max_value=1e9), max_size=20)
DEFAULTS = st.none() | st.tuples(st.floats(0, 1e9), st.floats(0, 1e9)).map(
    lambda pair: (min(pair), max(pair))
)
FACTS = st.builds(
    _facts,
    elapsed=SECONDS,
    deadline=st.none() | SECONDS,
    annotation=ANNOTATIONS,
    running_estimate=st.none() | SECONDS,
)


@given(FACTS, RUNS, st.booleans(), DEFAULTS)
def test_any_estimate_is_an_ordered_range_a_deadline_caps(
    facts: RunFacts,
    runs: list[float],
    own: bool,
    default: tuple[float, float] | None,
) -> None:
    history = _history("ns/train" if own else "ns/other", "ml", *runs)
    found: Estimate = estimate(facts, history, default)
    assert found.low <= found.expected <= found.high
    assert all(left >= 0 for left in found.remaining(max(0.0, facts.elapsed)))
    if found.overdue:
        assert found.low == found.high == max(0.0, facts.elapsed)
    elif facts.deadline is not None:
        assert found.high <= max(0.0, facts.deadline)
    if found.source.startswith("history"):
        kept, _ = history.samples(facts.owner, facts.queue)  # (the last runs, in whole seconds)
        assert found.samples == len(kept)
        if not found.overdue and facts.deadline is None:
            # (the range holds the median, unless the gang has run past it: then it starts now)
            median = statistics.median(kept)
            assert found.low <= max(median, facts.elapsed) <= found.high
            assert found.low == max(found.low, facts.elapsed)


@pytest.mark.parametrize(
    ("elapsed", "low", "expected", "high"),
    [
        (10.0, 30.0, 75.0, 120.0),  # (not yet at its low end: as the source says)
        (45.0, 45.0, 75.0, 120.0),  # (past its low end: that long at least)
        (80.0, 80.0, 100.0, 120.0),  # (past its expected time: halfway to the top)
    ],
)
def test_what_has_elapsed_is_a_floor(
    elapsed: float, low: float, expected: float, high: float
) -> None:
    facts = RunFacts(owner="ml/tf", queue="ml", elapsed=elapsed, annotation="30s-2m")
    found = estimate(facts, RunHistory(), None)
    assert (found.low, found.expected, found.high, found.overdue) == (low, expected, high, False)
