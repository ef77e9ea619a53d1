"""How `lahar whatif` says its answer: spans of time, the answer's lines (now, later and after
whom, never, not within the horizon, evictions, delays), the notes on what the estimate rests on
and cannot know, and the JSON for scripts."""

from __future__ import annotations

import json
import math

import pytest

from extender.simulate.cluster_gangs import FOREVER
from extender.simulate.from_cluster import Limits
from extender.simulate.whatif_words import as_json, lines, notes, span, spans
from tests.builders import AnswerBuilder, TraceBuilder, make_answer, make_trace, make_trace_job

TAKEN_AT = "2026-11-29T10:00:00Z"


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0, "0s"),
        (45, "45s"),
        (89, "89s"),
        (90, "2m"),
        (12 * 60, "12m"),
        (89 * 60, "89m"),
        (90 * 60, "1.5h"),
        (47 * 3600, "47.0h"),
        (48 * 3600, "2.0d"),
        (2.1 * 86400, "2.1d"),
    ],
)
def test_a_span_is_said_in_the_unit_a_person_would(seconds: float, said: str) -> None:
    assert span(seconds) == said


@pytest.mark.parametrize(
    ("low", "high", "said"),
    [
        (200, 1400, "3m-23m"),
        (600, 600, "10m"),
        (600, 620, "10m"),  # (the same when said: one span)
        (30, 5400, "30s-1.5h"),
        (240, FOREVER, "4m or later"),  # a run time no source gives
        (240, math.inf, "4m or later"),
    ],
)
def test_a_range_is_two_spans_or_one_or_open_above(low: float, high: float, said: str) -> None:
    assert spans(low, high) == said


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            make_answer("ml/tf").on("a", "b", hyper_node="s0"),
            ["Job ml/tf starts now, on a, b (HyperNode s0)"],
        ),
        (
            make_answer("tf").on(*(f"n{index}" for index in range(7))),
            ["Job tf starts now, on n0, n1, n2, n3, n4, and 2 more"],
        ),
        (
            make_answer("ml/tf")
            .starts(600, 200, 1400)
            .on("a", "b")
            .after("ml/old", 600, 200, 1400)
            .after("ml/other", 300, 150, 900, "history (3 runs of ml/other)"),
            [
                "Job ml/tf starts in about 10m (3m-23m), on a, b",
                "  after these end (run time source, estimated end):",
                "    ml/old  (annotation, 3m-23m)",
                "    ml/other  (history (3 runs of ml/other), 2m-15m)",
            ],
        ),
        (  # a gang it waits for whose run time has no upper end
            make_answer("tf").starts(7200, 3600, FOREVER).on("a").after("x", 7200, 3600, FOREVER),
            [
                "Job tf starts in about 2.0h (60m or later), on a",
                "  after these end (run time source, estimated end):",
                "    x  (annotation, 60m or later)",
            ],
        ),
        (
            make_answer("tf").never("gang sim/tf: 0 of 3 members placed", "Insufficient cpu"),
            [
                "Job tf would not start with this policy:",
                "  gang sim/tf: 0 of 3 members placed",
                "  Insufficient cpu",
            ],
        ),
        (
            make_answer("tf").never("Insufficient cpu", stuck=False, horizon=6 * 3600),
            [
                "Job tf does not start within 6.0h (the horizon; --hours plays further):",
                "  Insufficient cpu",
            ],
        ),
        (
            make_answer("ml/high").on("a").evicts("ml/low", knock_on=("ml/other",)),
            [
                "Job ml/high starts now, on a",
                "evicts: ml/low",
                "and, as a result, evicts: ml/other",
            ],
        ),
        (
            make_answer("tf")
            .on("b")
            .delays("wait", 200, 600)
            .delays("late", 200, None)
            .delays("near", 360, 380),
            [
                "Job tf starts now, on b",
                "delays wait: starts in 10m instead of 3m",
                "delays late: does not start within 24.0h, instead of in 3m",
                "delays near: starts 20s later, in about 6m",
            ],
        ),
    ],
)
def test_the_answer_is_said_in_a_few_lines(answer: AnswerBuilder, said: list[str]) -> None:
    assert lines(answer.build()) == said


def _snapshot() -> TraceBuilder:
    """Five gangs: run times from an annotation, two histories and none (one running, one
    pending), and one with no run time at all (a hand-written trace's)."""
    return (
        make_trace()
        .nodes(names=["a", "b"], cpu="4")
        .job(make_trace_job("a").task("w", 1, duration=600).run_time(300, 900))
        .job(
            make_trace_job("b")
            .task("w", 1, duration=600)
            .run_time(300, 900, "history (12 runs of ml/b)")
        )
        .job(
            make_trace_job("c")
            .task("w", 1, duration=600)
            .run_time(300, 900, "history (2 runs in queue default)")
        )
        .job(
            make_trace_job("held")
            .set(namespace="ml", started=-60)
            .task("w", 1, duration=FOREVER)
            .bound("a")
            .run_time(60, FOREVER, "unknown")
        )
        .job(make_trace_job("later").task("w", 1, duration=FOREVER).run_time(0, FOREVER, "unknown"))
        .job(make_trace_job("plain").task("w", 1, duration=60))
    )


ESTIMATE = (
    "An estimate: the cluster's snapshot ({when}) played under the policy of policy/lahar.yaml. "
    "It assumes no other Job arrives, no node fails or joins, and that gangs run as long as "
    "their run-time sources say."
)
SOURCES = "Run times of the gangs in the snapshot: 1 annotation, 2 history, 2 unknown."
UNKNOWN = (
    "Running gangs with no run time keep their nodes to the end: ml/held (set the annotation "
    "lahar.io/expected-run-time, or --default-run-time)."
)


@pytest.mark.parametrize(
    ("trace", "limits", "said"),
    [
        (  # replayed from a hand-written file: nothing else to say
            make_trace().nodes(1).job(make_trace_job("plain").task("w", 1)),
            None,
            [ESTIMATE.format(when="replayed from a file")],
        ),
        (
            _snapshot().set("takenAt", TAKEN_AT),
            Limits(),
            [ESTIMATE.format(when=f"taken at {TAKEN_AT}"), SOURCES, UNKNOWN],
        ),
        (
            _snapshot().set("takenAt", TAKEN_AT),
            Limits(
                pending_elsewhere=[f"default/p-{index}" for index in range(7)],
                outside_gangs=3,
                left_out=["default/g (1 of its minMember 2 pods)"],
                dropped=["ml/x: subGroupPolicy without a tier"],
                skipped=["ml/y: lahar.io/expected-run-time 'soon': invalid duration: skipped"],
            ),
            [
                ESTIMATE.format(when=f"taken at {TAKEN_AT}"),
                SOURCES,
                UNKNOWN,
                "Not played: 7 pending pods of other schedulers (default/p-0, default/p-1, "
                "default/p-2, default/p-3, default/p-4, and 2 more).",
                "3 running pods outside any gang (DaemonSets, other schedulers) keep what they "
                "take.",
                "Left out: default/g (1 of its minMember 2 pods).",
                "Not modelled: ml/x: subGroupPolicy without a tier.",
                "Run time of ml/y: lahar.io/expected-run-time 'soon': invalid duration: skipped.",
            ],
        ),
    ],
)
def test_the_notes_say_what_the_estimate_rests_on_and_cannot_know(
    trace: TraceBuilder, limits: Limits | None, said: list[str]
) -> None:
    assert notes(trace.model(), limits, "policy/lahar.yaml") == said


def test_json_has_the_answer_open_ends_as_null_and_the_notes() -> None:
    answer = (
        make_answer("ml/tf")
        .starts(600, 200, FOREVER)
        .on("a", "b", hyper_node="s0")
        .after("ml/old", 600, 200, FOREVER, "unknown")
        .evicts("ml/low", knock_on=("ml/other",))
        .delays("wait", 200, None)
    )
    trace = make_trace().nodes(names=["a", "b"], cpu="4").model()
    body = as_json(answer.build(), trace, None, "saved.policy.yaml")
    assert json.loads(json.dumps(body)) == {
        "takenAt": None,  # (a hand-written trace: no snapshot time)
        "job": "ml/tf",
        "start": 600,
        "startRange": [200, None],
        "now": False,
        "nodes": ["a", "b"],
        "hyperNode": "s0",
        "after": [{"job": "ml/old", "source": "unknown", "ends": [200, None]}],
        "evicts": ["ml/low"],
        "alsoEvicts": ["ml/other"],
        "delays": [{"job": "wait", "before": 200, "after": None}],
        "neverWithThisPolicy": False,
        "reasons": [],
        "horizon": 24 * 3600,
        "notes": notes(trace, None, "saved.policy.yaml"),
    }


@pytest.mark.parametrize(
    ("answer", "fields"),
    [
        (
            make_answer("tf").never("Insufficient cpu"),
            {"start": None, "startRange": None, "now": False, "neverWithThisPolicy": True},
        ),
        (
            make_answer("tf").never("Insufficient cpu", stuck=False, horizon=3600),
            {"start": None, "startRange": None, "neverWithThisPolicy": False, "horizon": 3600},
        ),
        (make_answer("tf").on("a"), {"start": 0, "startRange": [0, 0], "now": True}),
    ],
)
def test_json_says_whether_and_when(answer: AnswerBuilder, fields: dict[str, object]) -> None:
    trace = make_trace().nodes(1).model()
    body = as_json(answer.build(), trace, Limits(), "policy/lahar.yaml")
    assert {key: body[key] for key in fields} == fields
    assert body["reasons"] == list(answer.build().reasons)
