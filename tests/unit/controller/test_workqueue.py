"""The work queue: coalescing, one worker per key, retries with backoff, delays, bounded workers."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import pytest

from extender.controller.workqueue import WorkQueue

SLACK = 0.005  # the event loop may run a timer up to its clock resolution early


@contextlib.asynccontextmanager
async def working(
    queue: WorkQueue, handler: Callable[[str], Awaitable[float | None]], workers: int = 1
) -> AsyncIterator[None]:
    """`queue.run(handler, workers)` for the duration of the block."""
    task = asyncio.create_task(queue.run(handler, workers))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def scenario(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_key_added_many_times_while_queued_is_handled_once() -> None:
    async def body() -> None:
        queue, handled = WorkQueue(), Counter[str]()

        async def handler(key: str) -> None:
            handled[key] += 1

        for key in ["a", "b", "a", "a", "b"]:
            queue.add(key)
        assert len(queue) == 2
        async with working(queue, handler, workers=2):
            await asyncio.sleep(0.05)
        assert (handled, len(queue)) == (Counter(a=1, b=1), 0)

    scenario(body)


def test_a_key_added_while_handled_runs_again_after_never_alongside() -> None:
    async def body() -> None:
        queue = WorkQueue()
        release, started, twice = asyncio.Event(), asyncio.Event(), asyncio.Event()
        calls, running, overlap = [], set[str](), []

        async def handler(key: str) -> None:
            overlap.append(key in running)
            running.add(key)
            calls.append(key)
            started.set()
            if len(calls) == 1:
                await release.wait()
            running.discard(key)
            if len(calls) == 2:
                twice.set()

        queue.add("a")
        async with working(queue, handler, workers=2):
            await started.wait()
            queue.add("a")
            queue.add("a")
            assert len(queue) == 0  # held for after the running reconcile, not queued
            await asyncio.sleep(0.05)
            assert calls == ["a"]  # the idle second worker did not take it
            release.set()
            await twice.wait()
            await asyncio.sleep(0.05)
        assert (calls, overlap) == (["a", "a"], [False, False])

    scenario(body)


def test_retry_delays_double_up_to_the_cap_and_forget_resets_them() -> None:
    async def body() -> None:
        queue = WorkQueue(base_delay=0.01, max_delay=0.05)
        assert [queue.retry("a") for _ in range(5)] == [0.01, 0.02, 0.04, 0.05, 0.05]
        assert queue.failures("a") == 5
        queue.forget("a")
        assert (queue.failures("a"), queue.retry("a")) == (0, 0.01)

    scenario(body)


def test_a_failing_handler_is_retried_with_growing_backoff_then_forgotten() -> None:
    async def body() -> None:
        queue, loop, done = WorkQueue(base_delay=0.01), asyncio.get_running_loop(), asyncio.Event()
        times: list[float] = []
        failures: list[int] = []

        async def handler(key: str) -> None:
            times.append(loop.time())
            failures.append(queue.failures(key))
            if len(times) <= 3:
                raise RuntimeError("conflict")
            done.set()

        queue.add("a")
        async with working(queue, handler):
            await done.wait()
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert all(gap >= want - SLACK for gap, want in zip(gaps, [0.01, 0.02, 0.04], strict=True))
        assert (failures, queue.failures("a")) == ([0, 1, 2, 3], 0)

    scenario(body)


def test_a_handler_asking_for_a_delay_is_called_again_after_it() -> None:
    async def body() -> None:
        queue, loop, done = WorkQueue(), asyncio.get_running_loop(), asyncio.Event()
        times: list[float] = []

        async def handler(key: str) -> float | None:
            times.append(loop.time())
            if len(times) == 1:
                return 0.05
            done.set()
            return None

        queue.add("a")
        async with working(queue, handler):
            await done.wait()
            await asyncio.sleep(0.1)
        assert len(times) == 2
        assert times[1] - times[0] >= 0.05 - SLACK
        assert queue.failures("a") == 0  # a delay is not a failure

    scenario(body)


@pytest.mark.parametrize(
    "delays", [(0.3, 0.02), (0.02, 0.3)], ids=["a sooner request wins", "a later one is dropped"]
)
def test_add_after_keeps_the_earliest_request(delays: tuple[float, float]) -> None:
    async def body() -> None:
        queue, loop = WorkQueue(), asyncio.get_running_loop()
        times: list[float] = []

        async def handler(key: str) -> None:
            times.append(loop.time())

        start = loop.time()
        async with working(queue, handler):
            for delay in delays:
                queue.add_after("a", delay)
            await asyncio.sleep(0.4)
        assert len(times) == 1
        assert 0.02 - SLACK <= times[0] - start < 0.3

    scenario(body)


def test_add_after_zero_adds_at_once() -> None:
    async def body() -> None:
        queue = WorkQueue()
        queue.add_after("a", 0)
        assert len(queue) == 1

    scenario(body)


def test_no_more_handlers_run_at_once_than_workers() -> None:
    async def body() -> None:
        queue, handled = WorkQueue(), Counter[str]()
        active, peak = 0, 0

        async def handler(key: str) -> None:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.02)
            active -= 1
            handled[key] += 1

        for index in range(6):
            queue.add(f"k{index}")
        async with working(queue, handler, workers=2):
            await asyncio.sleep(0.2)
        assert (peak, sum(handled.values()), len(handled)) == (2, 6, 6)

    scenario(body)
