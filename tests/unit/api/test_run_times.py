"""The run-time annotation and the bounded history of finished runs: what each accepts, what it
keeps, and that a bad stored document is an empty history with the reason, never an exception."""

from __future__ import annotations

import json

import pytest

from extender.api.run_times import (
    OWNER_RUNS,
    OWNERS,
    QUEUE_RUNS,
    QUEUES,
    RunHistory,
    parse_history,
    parse_run_time,
)

T0 = 1_900_000_000.0  # an epoch second runs finish around


def _history(*runs: tuple[str, str, float, float]) -> RunHistory:
    history = RunHistory()
    for owner, queue, seconds, finished_at in runs:
        history = history.add(owner, queue, seconds, finished_at)
    return history


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("45m", (2700.0, 2700.0)),
        ("30m-1h", (1800.0, 3600.0)),
        ("1h30m-2h", (5400.0, 7200.0)),
        (" 90s ", (90.0, 90.0)),
        ("1.5h-1.5h", (5400.0, 5400.0)),
        ("0", (0.0, 0.0)),
        ("+10m", (600.0, 600.0)),
    ],
)
def test_run_time_is_a_point_or_a_range(text: str, expected: tuple[float, float]) -> None:
    assert parse_run_time(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("-5m", "cannot be negative"),
        ("30m--1h", "cannot be negative"),
        ("1h-30m", "lower end 1h is above the upper end 30m"),
        ("30m-", "no upper end"),
        ("1d", "invalid duration '1d'"),
        ("30m-2d", "invalid duration '2d'"),
        ("45", "invalid duration '45'"),
        ("30m-1h-2h", "invalid duration '1h-2h'"),
    ],
)
def test_a_bad_run_time_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=r"lahar\.io/expected-run-time") as raised:
        parse_run_time(text)
    assert says in str(raised.value)


@pytest.mark.parametrize(
    ("history", "owner", "queue", "expected"),
    [
        (_history(("ns/a", "q", 60, T0)), "ns/a", "q", ((60.0,), "owner")),
        (_history(("ns/a", "q", 60, T0), ("ns/b", "q", 90, T0)), "ns/a", "q", ((60.0,), "owner")),
        (
            _history(("ns/a", "q", 60, T0), ("ns/b", "q", 90, T0)),
            "ns/c",
            "q",
            ((60.0, 90.0), "queue"),
        ),
        (_history(("ns/a", "q", 60, T0)), "ns/c", "r", ((), None)),
        (RunHistory(), "ns/a", "q", ((), None)),
    ],
    ids=["own runs", "own runs beside others", "the queue's", "neither", "empty"],
)
def test_samples_are_the_owners_else_its_queues(
    history: RunHistory,
    owner: str,
    queue: str,
    expected: tuple[tuple[float, ...], str | None],
) -> None:
    assert history.samples(owner, queue) == expected


def test_runs_are_kept_in_whole_seconds_oldest_first() -> None:
    history = _history(("ns/a", "q", 59.6, T0 + 0.4), ("ns/a", "q", 30.2, T0 + 10))
    assert history.samples("ns/a", "q") == ((60.0, 30.0), "owner")
    assert history.owners["ns/a"].finished == T0 + 10


@pytest.mark.parametrize(
    ("runs", "owner_keeps", "queue_keeps"),
    [
        (OWNER_RUNS, OWNER_RUNS, OWNER_RUNS),
        (OWNER_RUNS + 1, OWNER_RUNS, OWNER_RUNS + 1),
        (QUEUE_RUNS + 5, OWNER_RUNS, QUEUE_RUNS),
    ],
)
def test_an_owner_keeps_its_last_runs_and_a_queue_its_last(
    runs: int, owner_keeps: int, queue_keeps: int
) -> None:
    history = _history(*((("ns/a", "q", float(n), T0 + n)) for n in range(runs)))
    assert history.owners["ns/a"].runs == tuple(float(n) for n in range(runs))[-owner_keeps:]
    assert history.queues["q"].runs == tuple(float(n) for n in range(runs))[-queue_keeps:]


def test_the_owner_past_the_bound_drops_the_least_recently_finished() -> None:
    # owner 0 finished first but runs again last; owner 1 is then the least recently finished
    runs = [(f"ns/j{n}", "q", 60.0, T0 + n) for n in range(OWNERS)]
    history = _history(*runs, ("ns/j0", "q", 60.0, T0 + OWNERS))
    assert len(history.owners) == OWNERS
    history = history.add("ns/new", "q", 60.0, T0 + OWNERS + 1)
    assert len(history.owners) == OWNERS
    assert "ns/j1" not in history.owners
    assert {"ns/j0", "ns/j2", "ns/new"} <= history.owners.keys()


def test_the_queue_past_the_bound_drops_the_least_recently_finished() -> None:
    history = _history(*((f"ns/j{n}", f"q{n}", 60.0, T0 + n) for n in range(QUEUES + 1)))
    assert len(history.queues) == QUEUES
    assert "q0" not in history.queues
    assert f"q{QUEUES}" in history.queues


def test_a_run_finished_before_every_kept_one_is_the_one_dropped() -> None:
    history = _history(*((f"ns/j{n}", "q", 60.0, T0 + n) for n in range(OWNERS)))
    assert history.add("ns/late", "q", 60.0, T0 - 1).owners.keys() == history.owners.keys()


@pytest.mark.parametrize(
    ("seconds", "finished_at"),
    [(-1.0, T0), (float("nan"), T0), (float("inf"), T0), (60.0, float("nan"))],
)
def test_a_run_that_is_no_run_is_refused(seconds: float, finished_at: float) -> None:
    with pytest.raises(ValueError, match="ns/a"):
        RunHistory().add("ns/a", "q", seconds, finished_at)


def test_dump_and_parse_give_the_history_back_with_keys_sorted() -> None:
    one = _history(("ns/b", "r", 60, T0), ("ns/a", "q", 90, T0 + 1))
    other = _history(("ns/a", "q", 90, T0 + 1), ("ns/b", "r", 60, T0))
    assert one.dump() == other.dump()
    assert parse_history(one.dump()) == (one, None)
    assert list(json.loads(one.dump())["owners"]) == ["ns/a", "ns/b"]


def test_the_dump_at_every_bound_stays_far_below_the_object_limit() -> None:
    # Names as long as Kubernetes lets a namespace, a Job and a Queue be in practice (63
    # characters each) and run times of two weeks: 392,983 bytes (384 KiB), against the 1 MiB a
    # ConfigMap may hold.
    def name(prefix: str, n: int) -> str:
        return f"{prefix}{n:0{63 - len(prefix)}d}"

    history = RunHistory()
    for queue in range(QUEUES):
        for run in range(QUEUE_RUNS):
            owner = f"{name('ns', queue)}/{name('job', queue)}"
            history = history.add(owner, name("q", queue), 1_209_600.0 + run, T0 + queue)
    for owner in range(OWNERS):
        for run in range(OWNER_RUNS):
            key = f"{name('ns', owner)}/{name('job', owner)}"
            history = history.add(key, name("q", owner % QUEUES), 1_209_600.0 + run, T0 + owner)
    size = len(history.dump().encode())
    assert len(history.owners) == OWNERS
    assert len(history.queues) == QUEUES
    assert all(len(q.runs) == QUEUE_RUNS for q in history.queues.values())
    assert size < 400 * 1024 < 1024 * 1024


def test_parse_keeps_only_what_the_bounds_allow() -> None:
    document = {
        "owners": {
            f"ns/j{n}": {"queue": "q", "finished": T0 + n, "runs": [60.0] * (OWNER_RUNS + 3)}
            for n in range(OWNERS + 2)
        },
        "queues": {"q": {"finished": T0, "runs": list(range(QUEUE_RUNS + 3))}},
    }
    history, problem = parse_history(json.dumps(document))
    assert problem is None
    assert len(history.owners) == OWNERS
    assert {"ns/j0", "ns/j1"}.isdisjoint(history.owners)
    assert all(len(owner.runs) == OWNER_RUNS for owner in history.owners.values())
    assert history.queues["q"].runs == tuple(float(n) for n in range(3, QUEUE_RUNS + 3))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "runs.json: the document: Invalid JSON"),
        ("{owners", "runs.json: the document: Invalid JSON"),
        ("[]", "runs.json: the document: Input should be an object"),
        ('{"owners": []}', "runs.json: owners: Input should be an object"),
        (
            '{"owners": {"ns/a": {"queue": "q", "finished": 1, "runs": [60, -1]}}}',
            "runs.json: owners.ns/a.runs.1: Input should be greater than or equal to 0",
        ),
        (
            '{"owners": {"ns/a": {"queue": "q", "finished": 1, "runs": ["60"]}}}',
            "runs.json: owners.ns/a.runs.0: Input should be a valid number",
        ),
        (
            '{"owners": {"ns/a": {"queue": "q", "finished": 1, "runs": [1e999]}}}',
            "runs.json: owners.ns/a.runs.0: Input should be a finite number",
        ),
        (
            '{"owners": {"ns/a": {"finished": 1, "runs": [60]}}}',
            "runs.json: owners.ns/a.queue: Field required",
        ),
        (
            '{"queues": {"q": {"runs": [60, "x", -1]}}}',
            "runs.json: queues.q.finished: Field required (and 2 more problems)",
        ),
    ],
    ids=[
        "empty",
        "not JSON",
        "a list",
        "owners a list",
        "negative",
        "a string",
        "infinite",
        "no queue",
        "several",
    ],
)
def test_a_bad_document_is_an_empty_history_and_one_line_naming_the_problem(
    text: str, says: str
) -> None:
    history, problem = parse_history(text)
    assert history == RunHistory()
    assert problem is not None
    assert problem.startswith(says)
    assert "\n" not in problem
