"""A Coscheduling PodGroup's status as scheduler-plugins' controller settles on it: the phase moved
from the one written before, the counts, occupiedBy written once on leaving Pending,
scheduleStartTime stamped once, the final phases kept, and the merge patch of a change."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Self

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.server.coscheduling_status import (
    coscheduling_status,
    coscheduling_status_patch,
    occupied_by,
)

T0, T1 = "2026-11-23T10:00:00Z", "2026-11-23T10:05:00Z"
OWNER = "team/trainer"


@dataclass(frozen=True)
class Gang:
    """A gang's members by state (`bound` ones are placed too) and what Lahar decided of it."""

    min_member: int = 3
    pending_: int = 0
    assumed_: int = 0  # placed, not bound yet
    bound_: int = 0
    succeeded_: int = 0
    failed_: int = 0
    admitted_: bool = False
    owner: str = OWNER

    def pending(self, count: int) -> Self:
        return replace(self, pending_=count)

    def assumed(self, count: int) -> Self:
        return replace(self, assumed_=count)

    def bound(self, count: int) -> Self:
        return replace(self, bound_=count)

    def succeeded(self, count: int) -> Self:
        return replace(self, succeeded_=count)

    def failed(self, count: int) -> Self:
        return replace(self, failed_=count)

    def admitted(self) -> Self:
        return replace(self, admitted_=True)

    def owned_by(self, owner: str) -> Self:
        return replace(self, owner=owner)

    def status(self, previous: Written | None = None) -> dict[str, Any]:
        return coscheduling_status(
            pending=self.pending_,
            placed=self.assumed_ + self.bound_,
            bound=self.bound_,
            succeeded=self.succeeded_,
            failed=self.failed_,
            min_member=self.min_member,
            admitted=self.admitted_,
            occupied_by=self.owner,
            previous=(previous or Written()).wire(),
            now=T1,
        )


@dataclass(frozen=True)
class Written:
    """The status written before, as read back from the server."""

    phase: str = ""
    occupied: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    started: str = ""

    def counts(self, running: int = 0, succeeded: int = 0, failed: int = 0) -> Self:
        return replace(self, running=running, succeeded=succeeded, failed=failed)

    def by(self, owner: str) -> Self:
        return replace(self, occupied=owner)

    def since(self, when: str) -> Self:
        return replace(self, started=when)

    def wire(self) -> dict[str, Any]:
        values = {
            "phase": self.phase,
            "occupiedBy": self.occupied,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "scheduleStartTime": self.started,
        }
        return {key: value for key, value in values.items() if value}


def written(phase: str) -> Written:
    return Written(phase=phase)


@pytest.mark.parametrize(
    ("gang", "expected"),
    [
        (Gang(), written("Pending")),
        (Gang().pending(2), written("Pending")),  # fewer members than minMember
        (Gang().pending(3), written("Scheduling").by(OWNER)),
        (Gang().pending(3).owned_by(""), written("Scheduling")),  # a pod without owners
        (Gang().assumed(3).admitted(), written("Scheduling").by(OWNER).since(T1)),
        (Gang().bound(3), written("Running").by(OWNER).counts(running=3).since(T1)),
        (Gang().bound(2).pending(1), written("Scheduling").by(OWNER).counts(running=2).since(T1)),
        (Gang().bound(2).succeeded(1), written("Running").by(OWNER).counts(2, 1).since(T1)),
        (Gang().bound(5).pending(4), written("Running").by(OWNER).counts(running=5).since(T1)),
        (Gang().succeeded(3), written("Finished").by(OWNER).counts(succeeded=3)),
        # Failed as soon as a failed member completes minMember with the others, running or not.
        (Gang().bound(2).failed(1), written("Failed").by(OWNER).counts(2, 0, 1).since(T1)),
        (Gang().pending(2).failed(1), written("Scheduling").by(OWNER).counts(failed=1)),
        (Gang().succeeded(3).failed(1), written("Finished").by(OWNER).counts(0, 3, 1)),
        # Without minMember (0) upstream is done at once, members or not.
        (Gang(min_member=0), written("Finished")),
        (Gang(min_member=0).pending(2), written("Finished").by(OWNER)),
    ],
)
def test_a_new_podgroup_settles_from_its_members(gang: Gang, expected: Written) -> None:
    assert gang.status() == expected.wire()


@pytest.mark.parametrize(
    ("gang", "previous", "expected"),
    [
        # Members gone below minMember: back to Pending, with the counts of then.
        (
            Gang().bound(2),
            written("Running").by(OWNER).counts(running=3).since(T0),
            written("Pending").by(OWNER).counts(running=2).since(T0),
        ),
        # In Pending the counts are not written: they stay as they were.
        (
            Gang().pending(1).succeeded(1),
            written("Pending").by(OWNER).counts(running=2).since(T0),
            written("Pending").by(OWNER).counts(running=2).since(T0),
        ),
        # Final phases stay, whatever the members do.
        (
            Gang().bound(3),
            written("Finished").counts(succeeded=3).since(T0),
            written("Finished").counts(succeeded=3).since(T0),
        ),
        (Gang().pending(3), written("Failed").counts(failed=3), written("Failed").counts(failed=3)),
        # Phases of earlier releases, and Unknown, go on from the counts.
        (Gang().bound(3), written("PreScheduling"), written("Running").counts(running=3).since(T1)),
        (Gang().bound(3), written("Scheduled").since(T0), written("Running").counts(3).since(T0)),
        (Gang().bound(1).pending(2), written("Unknown"), written("Scheduling").counts(1).since(T1)),
    ],
)
def test_the_phase_moves_on_from_the_one_written(
    gang: Gang, previous: Written, expected: Written
) -> None:
    assert gang.status(previous) == expected.wire()


@pytest.mark.parametrize(
    ("gang", "previous", "owner"),
    [
        # Written on leaving Pending only: the owner of another member later changes nothing.
        (Gang().pending(3).owned_by("team/other"), written("Scheduling").by(OWNER), OWNER),
        # Leaving Pending again: written again, from the member the caller names now.
        (Gang().pending(3).owned_by("team/other"), written("Pending").by(OWNER), "team/other"),
        # A member without owners leaves it as it was.
        (Gang().pending(3).owned_by(""), written("Pending").by(OWNER), OWNER),
        (Gang().pending(2), written("Pending"), ""),  # still Pending: not written
    ],
)
def test_occupied_by_is_written_on_leaving_pending(
    gang: Gang, previous: Written, owner: str
) -> None:
    assert gang.status(previous).get("occupiedBy", "") == owner


@pytest.mark.parametrize(
    ("gang", "previous", "started"),
    [
        (Gang().pending(3), written("Scheduling"), ""),  # neither admitted nor placed
        (Gang().pending(3).admitted(), written("Scheduling"), T1),
        (Gang().pending(2).assumed(1), written("Scheduling"), T1),
        (Gang().pending(3), written("Scheduling").since(T0), T0),  # kept once set
        (Gang().bound(3), written("Running").since(T0), T0),
        (Gang().succeeded(3).admitted(), written("Finished"), ""),  # final: nothing written
    ],
)
def test_schedule_start_time_is_stamped_once(gang: Gang, previous: Written, started: str) -> None:
    assert gang.status(previous).get("scheduleStartTime", "") == started


@given(
    min_member=st.integers(0, 4),
    counts=st.tuples(*[st.integers(0, 4)] * 5),
    admitted=st.booleans(),
    phase=st.sampled_from(["", "Pending", "Scheduling", "Running", "Unknown", "Scheduled"]),
)
def test_the_status_is_settled(
    min_member: int, counts: tuple[int, int, int, int, int], admitted: bool, phase: str
) -> None:
    """What it returns is what it would return again: the controller has no step left."""
    pending, assumed, bound, succeeded, failed = counts
    gang = Gang(min_member, pending, assumed, bound, succeeded, failed, admitted)
    status = gang.status(written(phase))
    again = coscheduling_status(
        pending=pending,
        placed=assumed + bound,
        bound=bound,
        succeeded=succeeded,
        failed=failed,
        min_member=min_member,
        admitted=admitted,
        occupied_by="team/someone-else",
        previous=status,
        now="2026-11-23T11:00:00Z",
    )
    assert again == status
    assert status["phase"] in {"Pending", "Scheduling", "Running", "Finished", "Failed"}


@pytest.mark.parametrize(
    ("namespace", "owners", "expected"),
    [
        ("team", ["trainer"], "team/trainer"),
        ("team", ["b-set", "a-job"], "team/a-job,team/b-set"),  # sorted, kinds left out
        ("team", [], ""),
    ],
)
def test_occupied_by_names_the_owners_in_the_pods_namespace(
    namespace: str, owners: list[str], expected: str
) -> None:
    assert occupied_by(namespace, owners) == expected


@pytest.mark.parametrize(
    ("before", "after", "patch"),
    [
        (written("Running").counts(3), written("Running").counts(3), None),
        (
            written("Running").counts(running=3).since(T0),
            written("Failed").counts(running=0, failed=1).since(T0),
            {"phase": "Failed", "running": None, "failed": 1},
        ),
        (
            written("Pending"),
            written("Scheduling").by(OWNER),
            {"phase": "Scheduling", "occupiedBy": OWNER},
        ),
    ],
)
def test_the_patch_names_what_changed_and_removes_what_went_to_zero(
    before: Written, after: Written, patch: dict[str, Any] | None
) -> None:
    assert coscheduling_status_patch(before.wire(), after.wire()) == patch


def test_fields_of_other_writers_are_left_alone() -> None:
    before = {**written("Pending").wire(), "scheduled": 2}
    patch = coscheduling_status_patch(before, written("Scheduling").wire())
    assert patch == {"phase": "Scheduling"}


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ({"placed": 1, "bound": 2}, r"bound \(2\) is a part of placed \(1\)"),
        ({"pending": -1, "failed": -2}, "counts cannot be negative: pending, failed"),
    ],
)
def test_inconsistent_counts_are_refused(counts: dict[str, int], message: str) -> None:
    arguments: dict[str, Any] = {
        "pending": 0,
        "placed": 0,
        "bound": 0,
        "succeeded": 0,
        "failed": 0,
        "min_member": 1,
        "admitted": False,
        "occupied_by": "",
        "previous": {},
        "now": T1,
    }
    with pytest.raises(ValueError, match=message):
        coscheduling_status(**(arguments | counts))
