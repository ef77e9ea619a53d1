"""The bind verb re-checks room: the scheduler filters the next pod while the previous one's
binding is under way, so two pods can pass filter for the last room on a node. The second is
refused with the reason; nothing is bound beyond what the node holds."""

from __future__ import annotations

import asyncio

from extender.actions.barrier import Barrier
from extender.actions.bind import bind
from extender.api.engine_settings import GangSettings
from extender.api.wire import ExtenderBindingArgs
from tests.builders import cluster, make_group, make_node, make_pod
from tests.engines import make_engine


def _args(name: str) -> ExtenderBindingArgs:
    return ExtenderBindingArgs(pod_name=name, pod_namespace="default", pod_uid=name, node="n1")


def test_the_second_of_two_pods_filtered_for_the_last_room_is_refused_at_bind() -> None:
    state = cluster([make_node("n1").cpu("3")], [make_pod(p).uid(p).cpu("2") for p in ("a", "b")])
    bound: list[str] = []

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        bound.append(name)

    async def main() -> None:
        first = await bind(state, binder, _args("a"))
        second = await bind(state, binder, _args("b"))
        assert first.error == ""
        assert "node n1 has no room left for pod default/b" in second.error
        assert "Insufficient cpu" in second.error
        again = await bind(state, binder, _args("a"))  # a retried call for a pod counted there
        assert again.error == ""

    asyncio.run(main())
    assert bound == ["a", "a"] and state.placed_on("b") is None


def test_extra_members_of_a_standing_gang_are_refused_when_the_room_is_gone() -> None:
    """minMember 2 of 4 on room for 3: the gang stands with 2, one extra joins, the other is
    refused at bind although both passed filter."""
    pods = [make_pod(f"g-{i}").uid(f"g-{i}").cpu("1").group("g") for i in range(4)]
    state = cluster([make_node("n1").cpu("3")], pods)
    state.upsert_pod_group(make_group("g").min_member(2).model())
    engine = make_engine(GangSettings(barrier_timeout=1.0, backoff=5))
    bound: list[str] = []

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        bound.append(name)

    barrier = Barrier(state, engine, binder)

    async def main() -> list[str]:
        core = await asyncio.gather(barrier.bind(_args("g-0")), barrier.bind(_args("g-1")))
        extras = await asyncio.gather(barrier.bind(_args("g-2")), barrier.bind(_args("g-3")))
        return [r.error for r in (*core, *extras)]

    errors = asyncio.run(main())
    assert errors[:3] == ["", "", ""] and "no room left" in errors[3]
    assert sorted(bound) == ["g-0", "g-1", "g-2"]
