"""The simulated kube-scheduler's queue: which pod it tries next."""

from __future__ import annotations

import asyncio
import heapq

from extender.framework.engine import Engine
from extender.simulate.clock import Clock, run
from extender.simulate.defaults import stock_policy
from extender.simulate.scheduler import Scheduler
from tests.builders import cluster, make_node, make_pod


async def _never(namespace: str, name: str, uid: str, node: str) -> None:
    raise AssertionError("nothing binds here")


def test_a_pod_that_failed_goes_back_in_line_by_its_last_failure() -> None:
    """p was created before q, but q failed last at 7 s and p at 8 s: kube-scheduler refreshes
    a pod's timestamp when it goes back to its queue, so q is tried first."""
    clock = Clock()
    state = cluster([make_node("n1").cpu("1")], [])
    p, q = make_pod("p").uid("p").cpu("2").model(), make_pod("q").uid("q").cpu("2").model()
    for pod in (p, q):
        state.upsert_pod(pod)

    async def main() -> list[str]:
        scheduler = Scheduler(state, Engine(stock_policy()), _never)
        scheduler.add(p, (0.1, 0))
        await asyncio.sleep(4.9)
        scheduler.add(q, (5.0, 0))
        scheduler._active.clear()  # (both tried and refused meanwhile)
        scheduler._queued.clear()
        await asyncio.sleep(2.0)
        scheduler.park(q)  # at 7 s
        await asyncio.sleep(1.0)
        scheduler.park(p)  # at 8 s
        await asyncio.sleep(22.0)
        scheduler.requeue()  # at 30 s: both back, their 1 s backoffs long over
        return [heapq.heappop(scheduler._active)[-1] for _ in range(2)]

    assert run(main(), clock) == ["q", "p"]
