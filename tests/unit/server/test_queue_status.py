"""Queue status: podgroup counts per phase, allocated, Closing -> Closed, the merge patch."""

from __future__ import annotations

from collections import Counter

import pytest

from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import QueueStatus
from extender.server.queue_status import phases_by_queue, queue_status, status_patch
from tests.builders import make_group, make_queue


def test_podgroups_are_counted_per_queue_by_phase() -> None:
    groups = [
        make_group("a").queue("q").model(),  # no phase written yet: pending
        make_group("b").queue("q").phase("Inqueue").model(),
        make_group("c").queue("q").phase("Running").model(),
        make_group("d").queue("q").phase("Completed").model(),
        make_group("e").queue("q").phase("Failed").model(),
        make_group("f").phase("Unknown").model(),  # no queue named: the default one
    ]
    assert phases_by_queue(groups) == {
        "q": Counter(pending=1, inqueue=1, running=1, completed=2),
        "default": Counter(unknown=1),
    }


@pytest.mark.parametrize(
    ("state", "phases", "expected"),
    [
        ("", Counter(), "Open"),  # unset is written Open
        ("Open", Counter(running=2), "Open"),
        ("Closed", Counter(pending=1), "Closed"),  # a user's choice stays
        ("Closing", Counter(running=1, completed=3), "Closing"),  # running work continues
        ("Closing", Counter(pending=1), "Closing"),
        ("Closing", Counter(completed=3), "Closed"),  # nothing left unfinished
        ("Closing", Counter(), "Closed"),
        ("Unknown", Counter(), "Unknown"),
    ],
)
def test_state(state: str, phases: Counter[str], expected: str) -> None:
    queue = make_queue("q").state(state).model() if state else make_queue("q").model()
    assert queue_status(queue, phases, EMPTY).state == expected


def test_status_carries_counts_and_what_is_placed() -> None:
    placed = Resources({"cpu": 1500, "memory": 2**30})
    status = queue_status(make_queue("q").model(), Counter(pending=2, running=1), placed)
    assert status == QueueStatus(state="Open", pending=2, running=1, allocated=placed)


def test_patch_names_only_what_changed_and_removes_resources_no_longer_allocated() -> None:
    written = (
        make_queue("q")
        .state("Open")
        .counts(running=2, allocated={"cpu": "2", "nvidia.com/gpu": "1"})
    )
    wanted = QueueStatus(state="Open", running=1, completed=1, allocated=Resources({"cpu": 500}))
    assert status_patch(written.model().status, wanted) == {
        "running": 1,
        "completed": 1,
        "allocated": {"cpu": "500m", "nvidia.com/gpu": None},
    }


def test_an_equal_status_needs_no_patch() -> None:
    written = make_queue("q").state("Open").counts(pending=1, allocated={"cpu": "1"}).model()
    wanted = QueueStatus(state="Open", pending=1, allocated=Resources({"cpu": 1000}))
    assert status_patch(written.status, wanted) is None
