"""The preemptor: all or nothing by a dry run, Events after the fact, a failing pass survived
(the loop's passes run with the preemptor's eviction)."""

from __future__ import annotations

import asyncio

from extender.cache.state import ClusterState
from extender.gangs.group_status import PodGroupEvent
from extender.gangs.ledger import Gangs
from extender.preemption.settings import PreemptionSettings
from extender.preemption.victims import Rules
from extender.server.preemptor import Preemptor
from tests.builders import cluster, make_node, running, waiting


class Evictions:
    def __init__(self, refuse: str = "") -> None:
        self.refuse, self.dry, self.real = refuse, [], []  # type: ignore[var-annotated]

    async def __call__(self, namespace: str, name: str, uid: str, dry_run: bool) -> bool:
        if name == self.refuse:
            raise RuntimeError("Cannot evict pod as it would violate the pod's disruption budget")
        (self.dry if dry_run else self.real).append(name)
        return True


def scene() -> tuple[ClusterState, Gangs]:
    state = cluster([make_node("n0").cpu("4")])
    running(state, "low", ["n0", "n0"], priority=1)
    waiting(state, "urgent", 1, cpu="2", priority=9)
    gangs = Gangs()
    gangs.verdict(state, state.view().nodes, state.pods["uid-default-urgent-0"])
    return state, gangs


def preemptor(
    state: ClusterState, gangs: Gangs, evict: Evictions, said: list[tuple[str, PodGroupEvent]]
) -> Preemptor:
    return Preemptor(
        state,
        gangs,
        PreemptionSettings(0.01, Rules()),
        evict,
        lambda key, event: said.append((key, event)),
        ready=asyncio.Event(),
    )


def test_a_refused_dry_run_evicts_nothing_and_says_so() -> None:
    async def scenario() -> None:
        state, gangs = scene()
        evict, said = Evictions(refuse="low-1"), []  # type: ignore[var-annotated]
        assert await preemptor(state, gangs, evict, said).passes.one_pass() is False
        assert evict.real == []
        assert [(key, event.reason) for key, event in said] == [
            ("default/urgent", "PreemptionBlocked")
        ]

    asyncio.run(scenario())


def test_victims_are_evicted_whole_and_reported_after_the_fact() -> None:
    async def scenario() -> None:
        state, gangs = scene()
        evict, said = Evictions(), []  # type: ignore[var-annotated]
        assert await preemptor(state, gangs, evict, said).passes.one_pass() is True
        assert evict.dry == evict.real == ["low-0", "low-1"]
        assert [(key, event.reason) for key, event in said] == [
            ("default/urgent", "Preempting"),
            ("default/low", "Preempted"),
        ]
        assert said[1][1].message.startswith("2 of 2 pods evicted (whole)")

    asyncio.run(scenario())


def test_a_failing_pass_is_logged_and_the_task_goes_on() -> None:
    async def scenario() -> None:
        state, gangs = scene()
        worker = preemptor(state, gangs, Evictions(), [])
        passes = 0
        third = asyncio.Event()

        async def broken() -> bool:
            nonlocal passes
            passes += 1
            if passes == 3:
                third.set()
            raise RuntimeError("a bug")

        worker.passes.one_pass = broken  # type: ignore[method-assign]
        worker.ready.set()
        task = asyncio.create_task(worker.run())
        await asyncio.wait_for(third.wait(), 5)
        assert not task.done()
        task.cancel()

    asyncio.run(scenario())
