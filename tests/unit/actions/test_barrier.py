"""The bind barrier: members wait until minMember are there, then bind together; or none binds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from extender.actions.barrier import Barrier
from extender.actions.bind import BindError
from extender.api.engine_settings import GangSettings
from extender.api.wire import ExtenderBindingArgs, ExtenderBindingResult
from extender.cache.state import ClusterState
from extender.framework.engine import OUTSIDE, Engine
from tests.builders import PodBuilder, cluster, make_group, make_hyper_node, make_node, make_pod
from tests.engines import make_engine


def member(index: int) -> PodBuilder:
    return make_pod(f"g-{index}").uid(f"g-{index}").cpu("1").group("g")


def setup(
    members: int, min_member: int, refuse: str = ""
) -> tuple[ClusterState, Engine, Barrier, list[str]]:
    state = cluster([make_node("n1").cpu("8")], [member(i) for i in range(members)])
    state.upsert_pod_group(make_group("g").min_member(min_member).model())
    engine = make_engine(GangSettings(barrier_timeout=0.2, backoff=5))
    bound: list[str] = []

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        if name == refuse:
            raise BindError(f"pods {name!r} not found")
        bound.append(name)

    return state, engine, Barrier(state, engine, binder), bound


async def until(check: Callable[[], bool]) -> None:
    """Let the loop run until `check` holds (a condition, not a fixed sleep)."""
    async with asyncio.timeout(1):
        while not check():  # noqa: ASYNC110 (the barrier exposes no event to wait on)
            await asyncio.sleep(0)


def call(barrier: Barrier, index: int) -> asyncio.Task[ExtenderBindingResult]:
    args = ExtenderBindingArgs(
        pod_name=f"g-{index}", pod_namespace="default", pod_uid=f"g-{index}", node="n1"
    )
    return asyncio.get_running_loop().create_task(barrier.bind(args))


def test_members_wait_at_the_barrier_until_min_member_then_bound_together() -> None:
    state, _engine, barrier, bound = setup(members=4, min_member=3)

    async def main() -> None:
        first, second = call(barrier, 0), call(barrier, 1)
        await until(lambda: barrier.waiting("default/g") == 2)
        assert bound == []
        assert state.is_assumed("g-0")  # members waiting at the barrier count on their node
        third = call(barrier, 2)
        results = await asyncio.gather(first, second, third)
        assert [r.error for r in results] == ["", "", ""]
        assert sorted(bound) == ["g-0", "g-1", "g-2"]
        extra = await call(barrier, 3)  # the gang stands: beyond minMember binds at once
        assert extra.error == "" and bound[-1] == "g-3"

    asyncio.run(main())


def test_a_gang_that_does_not_come_together_binds_nothing_and_backs_off() -> None:
    state, engine, barrier, bound = setup(members=3, min_member=3)

    async def main() -> None:
        results = await asyncio.gather(call(barrier, 0), call(barrier, 1))
        for result in results:
            assert result.error.startswith("gang default/g: only 2 of 3 members were placed")
        assert bound == []
        assert not state.is_assumed("g-0") and not state.is_assumed("g-1")
        assert engine.backoff_ends("default/g") > engine.clock()

    asyncio.run(main())


def test_a_member_deleted_while_waiting_at_the_barrier_fails_the_whole_gang() -> None:
    state, _engine, barrier, bound = setup(members=2, min_member=2)

    async def main() -> None:
        first = call(barrier, 0)
        await until(lambda: barrier.waiting("default/g") == 1)
        deleting = (
            member(0)
            .model()
            .model_copy(
                update={
                    "metadata": state.pods["g-0"].metadata.model_copy(
                        update={"deletion_timestamp": "2026-11-23T10:00:00Z"}
                    )
                }
            )
        )
        state.upsert_pod(deleting)
        second = await call(barrier, 1)
        assert "member default/g-0 was deleted while waiting at the barrier" in second.error
        assert "member default/g-0 was deleted while waiting at the barrier" in (await first).error
        assert bound == []

    asyncio.run(main())


def test_a_refused_binding_after_others_is_reported_as_a_partial_gang() -> None:
    _state, _engine, barrier, bound = setup(members=2, min_member=2, refuse="g-1")
    partial: list[str] = []
    barrier.observer.partial = partial.append

    async def main() -> None:
        results = await asyncio.gather(call(barrier, 0), call(barrier, 1))
        assert results[0].error == "" and "not found" in results[1].error
        assert bound == ["g-0"] and partial == ["default/g"]

    asyncio.run(main())


def test_a_waiting_call_the_scheduler_abandons_leaves_no_timer_behind() -> None:
    state, engine, barrier, bound = setup(members=2, min_member=2)

    async def main() -> None:
        first = call(barrier, 0)
        await until(lambda: barrier.waiting("default/g") == 1)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        assert barrier.waiting("default/g") == 0
        assert not state.is_assumed("g-0")
        await asyncio.sleep(0.3)  # past the barrier timeout: nothing fires, no backoff
        assert engine.backoff_ends("default/g") is None
        assert bound == []

    asyncio.run(main())


def admitted(
    members: int,
    min_member: int,
    clock: Callable[[], float] = time.monotonic,
    **settings: float,
) -> tuple[ClusterState, Engine, Barrier, list[str]]:
    """`setup`, with the gang admitted (its slots reserved) as a filter call admits it, by an
    engine reading `clock`."""
    state, _, _, bound = setup(members, min_member)
    gang_settings = GangSettings(**{"barrier_timeout": 0.2, "backoff": 5, **settings})
    engine = make_engine(gang_settings, clock=clock)

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        bound.append(name)

    outcome = engine.filter(state, state.pods["g-0"], [])
    assert outcome.gang_reason is None and "default/g" in engine.admitted()
    return state, engine, Barrier(state, engine, binder), bound


def test_a_gang_whose_missing_members_wait_in_the_queue_keeps_its_reservation() -> None:
    """The third member exists, ungated and pending: the scheduler has not come to it yet. The
    two waiting at the barrier are sent back to be placed again, their slots stay reserved,
    nothing backs off; when all three come, they bind together."""
    state, engine, barrier, bound = admitted(members=3, min_member=3)
    retried: list[str] = []
    barrier.observer.waited_on = retried.append

    async def main() -> None:
        results = await asyncio.gather(call(barrier, 0), call(barrier, 1))
        for result in results:
            assert "1 more wait in the scheduler's queue" in result.error
        assert retried == ["default/g"]
        assert engine.backoff_ends("default/g") is None
        assert sorted(engine.admission("default/g").slots) == ["g-0", "g-1", "g-2"]
        assert not state.is_assumed("g-0")
        again = await asyncio.gather(call(barrier, 0), call(barrier, 1), call(barrier, 2))
        assert [r.error for r in again] == ["", "", ""]
        assert sorted(bound) == ["g-0", "g-1", "g-2"]

    asyncio.run(main())


def test_a_gang_whose_missing_member_cannot_come_backs_off() -> None:
    """The third member is held by another controller's scheduling gate: it cannot come."""
    state, engine, barrier, bound = admitted(members=3, min_member=3)
    state.upsert_pod(member(2).gated("example.com/quota").model())

    async def main() -> None:
        results = await asyncio.gather(call(barrier, 0), call(barrier, 1))
        assert all("backing off" in r.error for r in results)
        assert engine.backoff_ends("default/g") > engine.clock()
        assert "default/g" not in engine.admitted()
        assert bound == []

    asyncio.run(main())


def test_patience_ends_once_the_gang_was_admitted_the_reservation_timeout_ago() -> None:
    now = [0.0]
    _, engine, barrier, bound = admitted(3, 3, lambda: now[0], reservation_timeout=30)
    assert engine.admitted_at("default/g") == 0.0
    now[0] = 31.0

    async def main() -> None:
        results = await asyncio.gather(call(barrier, 0), call(barrier, 1))
        assert all("backing off" in r.error for r in results)
        assert bound == []

    asyncio.run(main())


def kept_inside(state: ClusterState, engine: Engine) -> set[str]:
    """The nodes the engine lets member g-0 go to, of all the cluster's: those not failed for
    lying outside the HyperNode its gang is kept in."""
    nodes = sorted(state.view().nodes)
    outcome = engine.filter(state, state.pods["g-0"], nodes)
    assert outcome.gang_reason is None
    return {name for name in nodes if outcome.failed.get(name) != OUTSIDE}


def test_slots_sent_back_to_be_placed_again_keep_their_hyper_node() -> None:
    """A gang kept inside one HyperNode: the slots its waiting members get back when the barrier
    sends them to be placed again still keep them inside it (and they still may not go
    elsewhere)."""
    state, engine, barrier, _ = admitted(members=3, min_member=3)
    state.upsert_node(make_node("n2").cpu("8").model())
    state.upsert_hyper_node(make_hyper_node("s0").nodes("n1").model())
    state.upsert_hyper_node(make_hyper_node("s1").nodes("n2").model())
    state.upsert_pod_group(make_group("g").min_member(3).network("hard", 1).model())
    engine.release("default/g")
    assert kept_inside(state, engine) == {"n1"}

    async def main() -> None:
        await asyncio.gather(call(barrier, 0), call(barrier, 1))
        slots = engine.admission("default/g").slots
        assert {uid: slot.within for uid, slot in slots.items()} == dict.fromkeys(
            ("g-0", "g-1", "g-2"), frozenset({"n1"})
        )
        assert kept_inside(state, engine) == {"n1"}

    asyncio.run(main())
