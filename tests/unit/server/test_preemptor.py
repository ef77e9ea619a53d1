"""The preemptor: all or nothing by a dry run, Events after the fact, a failing pass survived
(the engine's preemption loop's passes run with the preemptor's eviction)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.server.group_status import PodGroupEvent
from extender.server.preemptor import Preemptor
from tests.builders import cluster, make_node, running, waiting
from tests.engines import preempting_engine


class Evictions:
    def __init__(self, refuse: str = "") -> None:
        self.refuse, self.dry, self.real = refuse, [], []  # type: ignore[var-annotated]

    async def __call__(self, namespace: str, name: str, uid: str, dry_run: bool) -> bool:
        if name == self.refuse:
            raise RuntimeError("Cannot evict pod as it would violate the pod's disruption budget")
        (self.dry if dry_run else self.real).append(name)
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
