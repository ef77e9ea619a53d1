"""After a restart, a partly bound gang is completed before a competing gang, or reported."""

from __future__ import annotations

from extender.gangs.ledger import Gangs
from extender.gangs.recovery import partly_bound, recover
from tests.builders import cluster, make_group, make_node, make_pod


def test_a_partly_bound_gang_takes_its_reservation_before_anyone_else() -> None:
    half = [make_pod(f"a-{i}").cpu("2").group("a") for i in range(4)]
    half[0], half[1] = half[0].on("n1"), half[1].on("n1")
    rival = [make_pod(f"b-{i}").cpu("2").group("b") for i in range(2)]
    state = cluster([make_node(n).cpu("4") for n in ("n1", "n2")], [*half, *rival])
    state.upsert_pod_group(make_group("a").min_member(4).model())
    state.upsert_pod_group(make_group("b").min_member(2).model())
    gangs = Gangs()

    [outcome] = recover(gangs, state, state.view().nodes)

    assert outcome.admitted and outcome.gang.key == "default/a"
    assert "found 2 of 4 members bound; completing it first" in outcome.message
    assert {slot.node for slot in gangs.admission("default/a").slots.values()} == {"n2"}
    verdict = gangs.verdict(state, state.view().nodes, state.pods["uid-default-b-0"])
    assert verdict.reason is not None and "cannot be placed" in verdict.reason


def test_a_partly_bound_gang_that_cannot_be_completed_is_reported() -> None:
    pods = [make_pod(f"a-{i}").cpu("3").group("a") for i in range(3)]
    pods[0] = pods[0].on("n1")
    state = cluster([make_node("n1").cpu("4")], pods)
    state.upsert_pod_group(make_group("a").min_member(3).model())

    [outcome] = recover(Gangs(), state, state.view().nodes)

    assert not outcome.admitted
    assert outcome.message.startswith("gang default/a: found 1 of 3 members bound; cannot complete")
    assert "Insufficient cpu" in outcome.message


def test_whole_and_untouched_gangs_are_not_partly_bound() -> None:
    whole = [make_pod(f"w-{i}").group("w").on("n1") for i in range(2)]
    untouched = [make_pod(f"u-{i}").group("u") for i in range(2)]
    state = cluster([make_node("n1").cpu("8")], [*whole, *untouched])
    state.upsert_pod_group(make_group("w").min_member(2).model())
    state.upsert_pod_group(make_group("u").min_member(2).model())
    assert partly_bound(state) == []
