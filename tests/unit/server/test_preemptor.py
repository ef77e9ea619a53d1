"""The preemptor: all or nothing by a dry run, every victim going before the first is evicted,
Events after the fact, a failing pass survived (the engine's preemption loop's passes run with
the preemptor's eviction)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.server.group_status import PodGroupEvent
from extender.server.preemptor import Preemptor
from tests.builders import cluster, make_node, make_pod, running, waiting
from tests.engines import preempting_engine


class Evictions:
    """The Eviction API: `refuse` refuses that pod (a PodDisruptionBudget: the dry run too),
    `fail` fails its real eviction only; `going` is what the state counted going at each real
    eviction (the watch shows nothing of them: it lags)."""

    def __init__(self, refuse: str = "", fail: str = "", state: ClusterState | None = None):
        self.refuse, self.fail, self.state = refuse, fail, state
        self.dry, self.real, self.going = [], [], []  # type: ignore[var-annotated]

    async def __call__(self, namespace: str, name: str, uid: str, dry_run: bool) -> bool:
        if name == self.refuse or (name == self.fail and not dry_run):
            raise RuntimeError("Cannot evict pod as it would violate the pod's disruption budget")
        (self.dry if dry_run else self.real).append(name)
        if not dry_run and self.state is not None:
            self.going.append(set(self.state.terminating))
        return True


def scene() -> tuple[ClusterState, Engine]:
    state = cluster([make_node("n0").cpu("4")])
    running(state, "low", ["n0", "n0"], priority=1)
    waiting(state, "urgent", 1, cpu="2", priority=9)
    engine = preempting_engine(interval=0.01)
    engine.filter(state, state.pods["uid-default-urgent-0"], [])
    return state, engine


def preemptor(
    state: ClusterState,
    engine: Engine,
    evict: Evictions,
    announce: Callable[[str, PodGroupEvent], None],
) -> Preemptor:
    """The preemptor, its preemption loop set up in the engine (as the app wires it)."""
    made = Preemptor(state, engine, evict, announce, ready=asyncio.Event())
    made.attach()
    return made


def test_a_refused_dry_run_evicts_nothing_and_says_so() -> None:
    async def scenario() -> None:
        state, engine = scene()
        evict, said = Evictions(refuse="low-1"), []  # type: ignore[var-annotated]
        preemptor(state, engine, evict, lambda key, event: said.append((key, event)))
        assert await engine.preemption_pass() is False
        assert evict.real == []
        assert [(key, event.reason) for key, event in said] == [
            ("default/urgent", "PreemptionBlocked")
        ]

    asyncio.run(scenario())


def test_victims_are_evicted_whole_and_reported_after_the_fact() -> None:
    async def scenario() -> None:
        state, engine = scene()
        evict, said = Evictions(), []  # type: ignore[var-annotated]
        preemptor(state, engine, evict, lambda key, event: said.append((key, event)))
        assert await engine.preemption_pass() is True
        assert evict.dry == evict.real == ["low-0", "low-1"]
        assert [(key, event.reason) for key, event in said] == [
            ("default/urgent", "Preempting"),
            ("default/low", "Preempted"),
        ]
        assert said[1][1].message.startswith("2 of 2 pods evicted (whole)")

    asyncio.run(scenario())


LOW = {"uid-default-low-0", "uid-default-low-1"}  # the victims' uids


def test_every_victim_is_going_before_the_first_is_evicted_and_its_gang_no_longer_stands() -> None:
    """The victims' Job makes their pods again as soon as the first is gone, before the watch
    shows the evictions: a replacement the scheduler asks about waits its turn behind the
    preemptor (without the mark, its gang stood on the victims and it passed), also once the
    watch has caught up; the preemptor is admitted."""

    async def scenario() -> None:
        state, engine = scene()
        evict = Evictions(state=state)
        preemptor(state, engine, evict, lambda key, event: None)
        assert await engine.preemption_pass() is True
        assert evict.going == [LOW, LOW]
        again = make_pod("low-0").uid("low-0-again").cpu("2").group("low").priority(1).model()
        state.learn(again)  # (the scheduler asks about it before the watch shows it)
        assert engine.filter(state, again, ["n0"]).gang_reason is not None
        for uid in LOW:  # the watch catches up
            state.delete_pod(uid)
        assert engine.filter(state, again, ["n0"]).gang_reason is not None
        urgent = state.pods["uid-default-urgent-0"]
        assert engine.filter(state, urgent, ["n0"]).gang_reason is None
        assert engine.admission("default/urgent") is not None

    asyncio.run(scenario())


def test_a_victim_whose_eviction_fails_stays_and_is_no_longer_going() -> None:
    async def scenario() -> None:
        state, engine = scene()
        evict = Evictions(fail="low-1", state=state)
        preemptor(state, engine, evict, lambda key, event: None)
        assert await engine.preemption_pass() is True
        assert evict.real == ["low-0"] and evict.going == [LOW]
        assert state.terminating == {"uid-default-low-0"}

    asyncio.run(scenario())


def test_a_failing_pass_is_logged_and_the_task_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """Announcing the preemption raises (nothing was evicted yet): the pass fails, is logged,
    and the next pass, an interval later, finds the same preemption and fails again."""

    async def scenario() -> None:
        state, engine = scene()
        passes = 0
        third = asyncio.Event()

        def broken(key: str, event: PodGroupEvent) -> None:
            nonlocal passes
            passes += 1
            if passes == 3:
                third.set()
            raise RuntimeError("a bug")

        worker = preemptor(state, engine, Evictions(), broken)
        worker.ready.set()
        task = asyncio.create_task(worker.run())
        await asyncio.wait_for(third.wait(), 5)
        assert not task.done()
        task.cancel()

    asyncio.run(scenario())
    failed = [r for r in caplog.records if r.getMessage() == "a preemption pass failed"]
    assert len(failed) >= 2 and all(r.exc_info is not None for r in failed)
