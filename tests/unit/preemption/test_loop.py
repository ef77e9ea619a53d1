"""The preemption loop with its eviction, sleep and clock injected: it evicts what the plan
chose, then sleeps the interval; a refused preemption is not looked for again while its block
holds; a pass that found nothing is not repeated on the same order; failures are told or end it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from extender.api.engine_settings import PreemptionSettings, Rules
from extender.api.scheduling import GANG_GATE
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.preemption.loop import PreemptionLoop
from extender.preemption.plan import Preemption, candidates
from tests.builders import cluster, make_group, make_node, make_pod, running, waiting

INTERVAL = 5.0


class World:
    """What the loop acts on: evictions and sleeps recorded, a clock set by hand. A sleep of
    the interval (after an eviction) holds until `release`."""

    def __init__(self, *, allow: bool = True) -> None:
        self.allow = allow
        self.evicted: list[tuple[str, list[str]]] = []  # preemptor, victims
        self.slept: list[float] = []
        self.now = 100.0
        self.resting = asyncio.Event()
        self.release = asyncio.Event()

    async def evict(self, preemption: Preemption) -> bool:
        self.evicted.append((preemption.preemptor.key, [u.key for u in preemption.victims]))
        return self.allow

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if seconds:
            self.resting.set()
            await self.release.wait()

    def clock(self) -> float:
        return self.now


def refused(state: ClusterState, gangs: Gangs, name: str) -> None:
    """Gang `name` asks and is refused for want of capacity: it waits."""
    gangs.verdict(state, state.view().nodes, state.pods[f"uid-default-{name}-0"])


def scene() -> tuple[ClusterState, Gangs]:
    """Gang low runs on the only node; urgent, of higher priority, is refused for want of room."""
    state = cluster([make_node("n0").cpu("4")])
    running(state, "low", ["n0", "n0"], priority=1)
    waiting(state, "urgent", 1, cpu="2", priority=9)
    gangs = Gangs()
    refused(state, gangs, "urgent")
    return state, gangs


def preemption(
    state: ClusterState, gangs: Gangs, world: World, interval: float = INTERVAL, **options: Any
) -> PreemptionLoop:
    return PreemptionLoop(
        state,
        gangs,
        PreemptionSettings(interval, Rules()),
        carry_out=world.evict,
        sleep=world.sleep,
        clock=world.clock,
        **options,
    )


def test_woken_the_loop_evicts_the_victims_then_sleeps_the_interval() -> None:
    async def scenario() -> None:
        state, gangs = scene()
        world = World()
        worker = preemption(state, gangs, world, polling=False)
        task = asyncio.create_task(worker.run())
        worker.wake()
        await asyncio.wait_for(world.resting.wait(), 5)
        assert world.evicted == [("default/urgent", ["default/low"])]
        assert world.slept == [INTERVAL]
        task.cancel()

    asyncio.run(scenario())


def test_a_refusal_for_want_of_capacity_wakes_the_attached_loop() -> None:
    async def scenario() -> None:
        state = cluster([make_node("n0").cpu("4")])
        running(state, "low", ["n0", "n0"], priority=1)
        waiting(state, "urgent", 1, cpu="2", priority=9)
        gangs, world = Gangs(), World()
        worker = preemption(state, gangs, world, polling=False)
        worker.attach()
        task = asyncio.create_task(worker.run())
        await asyncio.sleep(0.01)
        assert world.evicted == []  # nobody was refused yet
        refused(state, gangs, "urgent")
        await asyncio.wait_for(world.resting.wait(), 5)
        assert world.evicted == [("default/urgent", ["default/low"])]
        task.cancel()

    asyncio.run(scenario())


def test_nothing_is_looked_for_while_no_gang_waits() -> None:
    async def scenario() -> None:
        state = cluster([make_node("n0").cpu("4")])
        running(state, "low", ["n0", "n0"], priority=1)
        waiting(state, "urgent", 1, cpu="2", priority=9)
        world = World()
        assert await preemption(state, Gangs(), world).one_pass() is False
        assert world.evicted == []

    asyncio.run(scenario())


def test_a_refused_preemption_is_not_looked_for_again_while_its_block_holds() -> None:
    async def scenario() -> None:
        state, gangs = scene()
        world = World(allow=False)
        worker = preemption(state, gangs, world, blocked_for=60.0)
        assert await worker.one_pass() is False
        assert await worker.one_pass() is False
        assert len(world.evicted) == 1  # the second pass left urgent out
        world.now += 61.0
        state.upsert_node(make_node("n1").cpu("1").model())  # the order moves (too small a node)
        assert await worker.one_pass() is False
        assert len(world.evicted) == 2  # the block is over: urgent is preempted for again

    asyncio.run(scenario())


def test_a_pass_that_found_nothing_is_not_repeated_until_the_order_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searches: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        searches.append("search")
        return candidates(*args, **kwargs)

    monkeypatch.setattr("extender.preemption.loop.candidates", counted)

    async def scenario() -> None:
        state = cluster([make_node("n0").cpu("4")])
        running(state, "high", ["n0", "n0"], priority=9)  # nobody may take it
        waiting(state, "low", 1, cpu="2", priority=1)
        gangs, world = Gangs(), World()
        refused(state, gangs, "low")
        worker = preemption(state, gangs, world)
        assert await worker.one_pass() is False
        assert await worker.one_pass() is False
        assert len(searches) == 1
        state.upsert_node(make_node("n1").cpu("1").model())  # the order moves (too small a node)
        assert await worker.one_pass() is False
        assert len(searches) == 2 and world.evicted == []

    asyncio.run(scenario())


@pytest.mark.parametrize(("pausing", "slept"), [(True, [0, INTERVAL]), (False, [INTERVAL])])
def test_a_pass_pauses_between_gangs_when_told_to(pausing: bool, slept: list[float]) -> None:
    """big is more deserving but fits nowhere even with low gone; small fits once low is."""

    async def scenario() -> None:
        state = cluster([make_node("n0").cpu("4")])
        running(state, "low", ["n0", "n0"], cpu="1", priority=1)
        waiting(state, "big", 2, cpu="3", priority=9)
        waiting(state, "small", 1, cpu="3", priority=5)
        gangs, world = Gangs(), World()
        refused(state, gangs, "big")
        refused(state, gangs, "small")
        worker = preemption(state, gangs, world, polling=False, pausing=pausing)
        task = asyncio.create_task(worker.run())
        worker.wake()
        await asyncio.wait_for(world.resting.wait(), 5)
        assert world.evicted == [("default/small", ["default/low"])]
        assert world.slept == slept
        task.cancel()

    asyncio.run(scenario())


@pytest.mark.parametrize("polling", [True, False])
def test_polling_the_loop_looks_every_interval_unwoken(polling: bool) -> None:
    async def scenario() -> None:
        state, gangs = scene()
        worker = preemption(state, gangs, World(), 0.01, polling=polling)
        passes = 0

        async def counted() -> bool:
            nonlocal passes
            passes += 1
            return False

        worker.one_pass = counted  # type: ignore[method-assign]
        task = asyncio.create_task(worker.run())
        await asyncio.sleep(0.1)
        task.cancel()
        assert (passes >= 3) if polling else (passes == 0)

    asyncio.run(scenario())


class _Broken(Exception):
    pass


def test_a_failing_pass_is_told_and_the_loop_goes_on() -> None:
    async def scenario() -> None:
        state, gangs = scene()
        told: list[Exception] = []
        worker = preemption(state, gangs, World(), failed=told.append, polling=False)
        third = asyncio.Event()

        async def broken() -> bool:
            if len(told) == 2:
                third.set()
            raise _Broken("a bug")

        worker.one_pass = broken  # type: ignore[method-assign]
        task = asyncio.create_task(worker.run())
        for _ in range(3):
            worker.wake()
            await asyncio.sleep(0)
        await asyncio.wait_for(third.wait(), 5)
        assert not task.done() and all(isinstance(error, _Broken) for error in told)
        task.cancel()

    asyncio.run(scenario())


def test_a_failing_pass_ends_the_loop_when_nobody_is_told() -> None:
    async def scenario() -> None:
        state, gangs = scene()
        worker = preemption(state, gangs, World(), polling=False)

        async def broken() -> bool:
            raise _Broken("a bug")

        worker.one_pass = broken  # type: ignore[method-assign]
        task = asyncio.create_task(worker.run())
        worker.wake()
        with pytest.raises(_Broken):
            await asyncio.wait_for(task, 5)

    asyncio.run(scenario())


def test_a_gang_held_by_lahars_gate_is_preempted_for_though_nobody_was_refused() -> None:
    """In a full cluster the walk records no refusal for a gang whose pods Lahar's gate holds
    (the scheduler never asks about them): the pass looks for it all the same."""

    async def scenario() -> None:
        state = cluster([make_node("n0").cpu("4")])
        running(state, "low", ["n0", "n0"], priority=1)
        urgent = make_pod("urgent-0").uid("urgent-0").cpu("2").group("urgent").priority(9)
        state.upsert_pod(urgent.scheduler("lahar").gated(GANG_GATE).model())
        state.upsert_pod_group(make_group("urgent").min_member(1).model())
        gangs, world = Gangs(schedulers={"lahar"}), World()
        assert gangs.let_in(state, state.view().nodes) == []
        assert not gangs.refused()
        assert await preemption(state, gangs, world).one_pass() is True
        assert world.evicted == [("default/urgent", ["default/low"])]

    asyncio.run(scenario())
