"""What a gang's view says of it without a plan: the cpu of the largest member a plan places, and
what readers keep with it."""

from __future__ import annotations

import pytest

from extender.api.resources import CPU
from extender.gangs.members import MemoSlot, view_gang
from extender.gangs.refusals import Cause, Deferred, Rejection
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod

FOUR = make_pod("x").cpu("4").model().request[CPU]


def member(name: str, cpu: str = "1") -> PodBuilder:
    return make_pod(name).cpu(cpu).group("g")


@pytest.mark.parametrize(
    ("pods", "min_member", "expected"),
    [
        ([member("a"), member("b", "4")], 2, FOUR),  # the largest, whatever the order
        ([member("a")], 2, None),  # too few pods: refused whatever the room
        ([member("a").on("n0").phase("Running"), member("b", "4")], 1, -1),  # nothing to place
        ([member("a"), member("b", "4")], None, None),  # no PodGroup
    ],
)
def test_largest_cpu(pods: list[PodBuilder], min_member: int | None, expected: int | None) -> None:
    state = cluster([make_node("n0").cpu("8")], pods)
    if min_member is not None:
        state.upsert_pod_group(make_group("g").min_member(min_member).model())
    assert view_gang(state, "default/g").largest_cpu == expected


def test_a_deferred_refusal_says_its_cause_without_working_out_words_that_can_wait() -> None:
    """Reading the cause runs the outer work, and takes the cause of what it made; an inner
    refusal whose cause is known works out its words only when they are read."""
    worded: list[str] = []

    def words() -> Rejection:
        worded.append("inner")
        return Rejection(Cause.NOT_ENOUGH_RESOURCES, "gang g: 2 of 2 members cannot be placed")

    outer = Deferred(lambda: Deferred(words, Cause.NOT_ENOUGH_RESOURCES))
    assert outer.cause == "NotEnoughResources" and worded == []
    assert outer.message == "gang g: 2 of 2 members cannot be placed" and worded == ["inner"]
    assert outer.settled() == Rejection(Cause.NOT_ENOUGH_RESOURCES, outer.message)
    assert worded == ["inner"]


def test_what_a_reader_keeps_with_a_view_lasts_as_long_as_the_view_in_its_own_slot() -> None:
    state = cluster([make_node("n0").cpu("8")], [member("a")])
    state.upsert_pod_group(make_group("g").min_member(1).model())
    mine, namesake = MemoSlot[int]("figure"), MemoSlot[str]("figure")
    view = view_gang(state, "default/g")
    view.memo.put(mine, 3)
    assert view_gang(state, "default/g").memo.get(mine) == 3  # the same view, kept
    assert view.memo.get(namesake) is None  # slots are told apart by identity, not by name
    state.upsert_pod(member("b").model())  # the gang changed: a new view, nothing kept
    assert view_gang(state, "default/g").memo.get(mine) is None
