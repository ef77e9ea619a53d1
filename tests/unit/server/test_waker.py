"""A replica that starts to serve wakes every gang with pending members: the scheduler parked
what it could not place while no extender answered, and no cluster event may requeue it."""

from __future__ import annotations

import asyncio
import contextlib

from extender.framework.gang import Gangs
from extender.framework.gang_types import GangSettings
from extender.server.waker import RETRY_ANNOTATION, Waker
from tests.builders import cluster, make_group, make_node, make_pod


def test_serving_starts_by_waking_the_pending_members_of_every_gang() -> None:
    pods = [
        make_pod("w-0").uid("w-0").group("waiting"),
        make_pod("w-1").uid("w-1").group("waiting"),
        make_pod("r-0").uid("r-0").group("running").on("n1"),
        make_pod("plain").uid("plain"),
    ]
    state = cluster([make_node("n1").cpu("8")], pods)
    for name in ("waiting", "running"):
        state.upsert_pod_group(make_group(name).min_member(1).model())
    touched: list[str] = []

    async def patch(namespace: str, name: str, annotations: dict[str, str]) -> None:
        assert RETRY_ANNOTATION in annotations
        touched.append(name)

    async def main() -> None:
        waker = Waker(state, Gangs(GangSettings()), patch)
        task = asyncio.create_task(waker.run())
        async with asyncio.timeout(1):
            while len(touched) < 2:  # noqa: ASYNC110 (the waker exposes no event to wait on)
                await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert sorted(touched) == ["w-0", "w-1"]
