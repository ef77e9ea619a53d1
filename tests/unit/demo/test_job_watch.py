"""What the demo's summary reports: time to start, and a partial gang only when a Job keeps part
of its minimum bound for longer than a gang's binding takes."""

from __future__ import annotations

import io
from typing import Any, cast

import pytest
from kubernetes import client as k8s

from extender.demo.job_watch import PARTIAL_GRACE, JobWatch
from extender.demo.live_table import JobRow, LiveTable
from extender.demo.script import report_jobs


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _watch(clock: _Clock) -> JobWatch:
    return JobWatch(cast(k8s.ApiClient, None), "demo", LiveTable(io.StringIO()), clock=clock)


@pytest.mark.parametrize(
    ("observed", "partial"),
    [
        ([(0.0, 0), (0.5, 3), (0.7, 6)], False),  # members bound together within the grace
        ([(0.0, 0), (0.5, 3), (0.5 + PARTIAL_GRACE + 0.1, 3)], True),  # stuck at 3 of 6
        ([(0.0, 3), (1.0, 0), (1.0 + PARTIAL_GRACE + 0.1, 0)], False),  # back to none: waits whole
        ([(0.0, 6), (5.0, 2), (9.0, 2)], False),  # started, then its pods finished and went
    ],
)
def test_a_partial_gang_is_one_stuck_with_part_of_its_minimum(
    observed: list[tuple[float, int]], partial: bool
) -> None:
    clock = _Clock()
    watch = _watch(clock)
    watch.submitted("job")
    record = watch.records["job"]
    for at, bound in observed:
        clock.now = 100.0 + at
        watch._track(record, bound, 6)
    assert record.partial is partial


def test_the_summary_gives_time_to_start_and_fails_on_a_partial_or_unstarted_job() -> None:
    clock = _Clock()
    watch = _watch(clock)
    for name in ("tf-a", "tf-b"):
        watch.submitted(name)
    clock.now += 1.5
    watch._track(watch.records["tf-a"], 6, 6)
    for record in watch.records.values():
        record.row = JobRow(record.name, "Running", 6, 6, "")
        record.peak = 6
    lines: list[Any] = []
    assert report_jobs(watch, lines.append) == 1  # tf-b never started
    assert any("tf-a" in line and "1.50 s" in line for line in lines)
    assert "never started: tf-b" in lines[-1]
    clock.now += 3.0
    watch._track(watch.records["tf-b"], 6, 6)
    lines.clear()
    assert report_jobs(watch, lines.append) == 0
    assert any(line.strip().startswith("partial gangs: 0") for line in lines)
