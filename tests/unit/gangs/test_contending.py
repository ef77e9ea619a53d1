"""The contenders kept from walk to walk are those a full look at every gang would line up.

Whole simulated runs (hypothesis draws the trace) are played with `Contending.sync` checked at
every walk against a full look from the same starting point: the same contenders (view, age,
asked, refusal), the same lines (rank order), the same ages of gangs never asked, the same
moment the order expires. The runs' short starvation limit makes gangs starve mid-run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.engine_settings import Ordering
from extender.api.resources import Resources
from extender.framework.policy import build_policy
from extender.gangs import contending as contending_module
from extender.gangs.contending import Contending
from extender.gangs.ledger import Gangs
from extender.gangs.lineup import Contender, Lineup, Ranking
from extender.gangs.members import view_gang
from extender.gangs.order import Order, Walk
from extender.gangs.refusals import Deferred
from extender.gangs.turns import Run, Turn
from extender.plugins import REGISTRY
from extender.simulate.run import simulate
from extender.simulate.synthetic import generate
from extender.simulate.trace import parse_trace
from tests.builders import make_group, make_pod, make_queue
from tests.unit.gangs.test_order import Gang, Scenario, ask, engine, ledger, state_of

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"


def described(contending: Contending, now: float) -> dict[str, Any]:
    contenders = {
        key: (c.gang, c.since, c.asked, c.blocked.cause if c.blocked else None)
        for key, c in contending.contenders.items()
    }
    lines = contending.lineup.lines()
    return {
        "contenders": contenders,
        "lines": {q: list(line.ranked) for q, line in lines.items() if line.ranked},
        "starving": {q: list(line.starving) for q, line in lines.items() if line.starving},
        "starving keys": set(contending.lineup.starving),
        "starving in line": {k for line in lines.values() for k, e in line.entries.items() if e[2]},
        "ruled": {key for line in lines.values() for key in line.ruled},
        "refused": {k: r.cause for k, r in contending.lineup.refused.items()},
        "floor": contending.lineup.floor,
        "pending_since": dict(contending.pending_since),
        "expires": contending.next_moment(now),
    }


def lineup_of(gangs: Gangs) -> Lineup:
    """The ledger's own lineup, kept from walk to walk."""
    return gangs._walks._contending.lineup


def current_order(gangs: Gangs) -> Order | None:
    """The ledger's current walk, as far as it was taken (not taken further)."""
    return gangs._walks._order


class Checked:
    """Wraps `Contending.sync`: after each, a fresh `Contending` given the same starting point
    looks at every gang; the two must agree."""

    def __init__(self) -> None:
        self.syncs = 0
        self.looked_at: list[int] = []  # gangs looked at again per incremental sync
        self.original: Callable[..., tuple[list[str], list[str]]] = Contending.sync

    def method(self) -> Callable[..., tuple[list[str], list[str]]]:
        def sync(contending: Contending, *args: Any, **kwargs: Any) -> tuple[list[str], list[str]]:
            return self.check(contending, *args, **kwargs)

        return sync

    def check(
        self, contending: Contending, state: Any, queues: Any, ranking: Ranking, **kw: Any
    ) -> tuple[list[str], list[str]]:
        full = Contending()
        full.pending_since = dict(contending.pending_since)
        full.contenders = dict(contending.contenders)
        full._unplaced = contending._unplaced
        dirty = len(contending._dirty)
        gone = self.original(contending, state, queues, ranking, **kw)
        _, finished = self.original(full, state, queues, ranking, **kw)
        assert sorted(finished) == sorted(gone[1])  # the same refused gangs are done
        assert described(contending, ranking.now) == described(full, ranking.now)
        self.syncs += 1
        self.looked_at.append(dirty)
        return gone


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(1, 10_000), load=st.sampled_from([1.0, 1.5, 2.5]))
def test_a_whole_run_lines_up_as_a_full_look_would(seed: int, load: float) -> None:
    document = yaml.safe_load(POLICY.read_text())
    [sla] = [p for tier in document["tiers"] for p in tier["plugins"] if p["name"] == "sla"]
    sla["arguments"]["sla.waitingTimeSeconds"] = 30  # gangs starve mid-run
    policy = build_policy(document, REGISTRY)
    checked = Checked()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(contending_module.Contending, "sync", checked.method())
        trace = parse_trace(generate(60, 4, load=load, seed=seed))
        outcome = simulate(trace, policy, "lahar")
    assert not outcome.stuck
    assert checked.syncs > 10
    assert sum(checked.looked_at) < checked.syncs * len(outcome.jobs)  # not every gang each time


def test_a_gang_that_misses_starving_by_rounding_starves_at_a_later_walk() -> None:
    """56.7 + 120 is not above 176.7, yet 176.7 - 56.7 is below 120: at the walk at 176.7 the
    gang does not starve and that moment has passed; it is looked at again at the next walk."""
    now = [56.7]
    built = engine(sla_seconds=120, now=now)
    running = [Gang("run0", 1, cpu="4", on="n0"), Gang("run1", 1, cpu="2", on="n1")]
    state = state_of(Scenario(2, [*running, Gang("big", 2, cpu="4")]))
    assert ask(built, state, "big") is not None  # it waits from 56.7

    def aimed() -> dict[str, Resources]:
        return built.order(state).turns["default/big"].targets

    now[0] = 176.7
    assert aimed() == {}  # not starving yet (by rounding)
    now[0] = 177.0
    state.upsert_pod(make_pod("late-0").group("late").model())  # a change: walked again
    state.upsert_pod_group(make_group("late").model())
    assert sorted(aimed()) == ["n0", "n1"]  # starving: it aims where a drain would


def test_the_lines_stay_sorted_as_gangs_are_put_again_and_a_walk_sees_no_change_under_it() -> None:
    now = [0.0]
    built = ledger(sla_seconds=60, now=now)
    gangs = [Gang("a", 1, cpu="2"), Gang("b", 1, cpu="3"), Gang("c", 1, cpu="1")]
    state = state_of(Scenario(1, [Gang("run", 1, cpu="4", on="n0"), *gangs]))
    for gang in gangs:
        assert ask(built, state, gang.name) is not None  # all seen at 0.0: by key then
        now[0] += 1.0
    lineup = lineup_of(built)
    everyone = ["default/a", "default/b", "default/c"]
    assert [key for _, key in lineup.lines()["default"].ranked] == everyone
    assert lineup.floor == 1000  # c's single member: 1 cpu
    now[0] = 60.0  # all starve: put again, ranked anew, in the same order
    built.order(state, state.view().nodes)
    line = lineup.lines()["default"]
    assert [key for _, key in line.ranked] == everyone
    assert [rank[0] for rank, _ in line.ranked] == [0.0, 0.0, 0.0]  # starving
    queues, nodes = built.queues(state), state.view().nodes
    walked = Walk(lineup, queues, nodes, {}, built.ordering)
    first = walked.step()  # starving: a turn of its own even past the point where nothing fits
    assert isinstance(first, Turn) and first.key == "default/a"
    lineup.drop("default/c")
    assert lineup.floor == 2000
    # The walk goes on over the lines as they stood when it began; the next walk has no c.
    walked.take()
    assert list(walked.turns) == everyone
    assert [key for _, key in line.ranked] == everyone  # (the line the walk holds: unchanged)
    after = Walk(lineup, queues, nodes, {}, built.ordering)
    after.take()
    assert list(after.turns) == ["default/a", "default/b"]


def test_lines_a_walk_holds_never_change_and_only_the_lines_that_change_are_copied() -> None:
    scenario = Scenario(
        1,
        [Gang("a1", 1, queue="a"), Gang("a2", 1, queue="a"), Gang("b1", 1, queue="b")],
        [make_queue("a"), make_queue("b")],
    )
    state = state_of(scenario)
    built = engine()
    queues = built.queues(state)
    ranking = Ranking(Ordering(), 0.0, state.capacity(), lambda gang: 0)
    contenders = {
        key: Contender(view_gang(state, key), 0.0)
        for key in ("default/a1", "default/a2", "default/b1")
    }
    lineup = Lineup.of(contenders.values(), queues, ranking)
    handed = lineup.lines()  # (what a walk holds)
    lineup.drop("default/a1")
    lineup.put(Contender(view_gang(state, "default/a1"), 5.0), queues, ranking)  # ranked anew
    lineup.drop("default/a2")
    assert [key for _, key in handed["a"].ranked] == ["default/a1", "default/a2"]
    assert set(handed["a"].entries) == {"default/a1", "default/a2"}
    after = lineup.lines()
    assert [key for _, key in after["a"].ranked] == ["default/a1"]
    assert after["a"] is not handed["a"] and after["b"] is handed["b"]  # (b did not change)
    lineup.drop("default/b1")
    assert "b" not in lineup.lines() and [key for _, key in after["b"].ranked] == ["default/b1"]


def test_past_the_point_where_nothing_fits_refusals_come_as_runs_made_only_when_read() -> None:
    now = [0.0]
    built = ledger(sla_seconds=60, now=now)
    gangs = [Gang("a", 1, cpu="2"), Gang("b", 1, cpu="3")]
    state = state_of(Scenario(1, [Gang("run", 1, cpu="4", on="n0"), *gangs]))
    for gang in gangs:
        assert ask(built, state, gang.name) is not None
    lineup = lineup_of(built)
    walked = Walk(lineup, built.queues(state), state.view().nodes, {}, Ordering())
    turns = walked.turns
    assert "default/a" not in turns
    [run] = walked.take()  # one run: nobody is starving
    assert isinstance(run, Run) and list(run) == ["default/a", "default/b"]
    assert "default/a" in turns and "default/run" not in turns and len(turns) == 2
    why = turns["default/b"].rejection
    assert isinstance(why, Deferred) and why.cause == "NotEnoughResources"
    assert turns["default/b"] is turns["default/b"]  # made once
    assert list(turns) == ["default/a", "default/b"]


@pytest.mark.parametrize("aimed_before", [False, True])
def test_a_starving_gang_in_a_line_past_the_point_where_nothing_fits(aimed_before: bool) -> None:
    """Ranked by age alone, a starving gang sits between gangs that are not: the runs are found
    by position around it, and it takes a turn of its own unless it aims where it did."""
    scenario = Scenario(
        1, [Gang("run", 1, cpu="4", on="n0"), Gang("w", 1), Gang("x", 1), Gang("y", 1)]
    )
    state = state_of(scenario)
    ordering = Ordering(starving_after=60)  # no job-order plugin: by age
    queues = engine(now=[100.0]).queues(state)
    ranking = Ranking(ordering, 100.0, state.capacity(), lambda gang: 0)
    contenders = [
        Contender(view_gang(state, "default/w"), 0.0, asked=False),  # never asked: not starving
        Contender(view_gang(state, "default/x"), 5.0),  # starving
        Contender(view_gang(state, "default/y"), 70.0),  # not yet
    ]
    lineup = Lineup.of(contenders, queues, ranking)
    assert [key for _, key in lineup.lines()["default"].starving] == ["default/x"]
    aims = {"n0": Resources({"cpu": 2000})}
    targets = {"default/x": aims} if aimed_before else {}
    walked = Walk(lineup, queues, state.view().nodes, {}, ordering, targets=targets)
    turns = walked.turns
    taken = walked.take(until="default/y")
    if aimed_before:  # one run, x in it: its turn is made when read, aiming as before
        [run] = taken
        assert isinstance(run, Run)
        assert list(run) == ["default/w", "default/x", "default/y"]
        assert turns["default/x"].targets == aims
        return
    first, own, last = taken
    assert isinstance(first, Run) and list(first) == ["default/w"]
    assert isinstance(own, Turn) and own.key == "default/x" and own.targets
    assert isinstance(last, Run) and list(last) == ["default/y"]
    assert list(turns) == ["default/w", "default/x", "default/y"] and walked.pending is None
    assert [key for key, _ in turns.given()] == ["default/x"]  # (the runs' are not made)
    assert "default/w" not in turns._turns
    assert [(key, turn.key) for key, turn in turns.items()] == [(k, k) for k in turns]
    made = dict(turns.items())
    assert all(made[key] is turns[key] for key in turns)  # (made once, kept)
    assert [key in turns for key in ("default/w", "default/y", "default/run")] == [
        True,
        True,
        False,
    ]


def test_a_gang_asked_about_midway_through_a_run_takes_the_walk_only_that_far() -> None:
    now = [0.0]
    built = ledger(sla_seconds=600, now=now)
    gangs = [Gang("a", 1, cpu="2"), Gang("b", 1, cpu="3"), Gang("c", 1, cpu="3")]
    state = state_of(Scenario(1, [Gang("run", 1, cpu="4", on="n0"), *gangs]))
    built.serve(state.pods["uid-default-a-0"].spec.scheduler_name)
    assert ask(built, state, "b") is not None  # a, b and c in one run; taken as far as b
    order = current_order(built)
    assert order is not None
    assert "default/b" in order.turns and "default/c" not in order.turns
    assert order.walk.pending is not None
    assert list(order.walk.pending) == ["default/c"]
    assert ask(built, state, "c") is not None  # same walk: the rest of the run
    assert current_order(built) is order
    assert "default/c" in order.turns and order.walk.pending is None
    assert list(order.turns) == ["default/a", "default/b", "default/c"]
