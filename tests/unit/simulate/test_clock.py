"""The virtual-time loop: timers fire at their virtual moment, in order, without real waiting."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from extender.simulate import clock as clock_module
from extender.simulate.clock import Clock, Stalled, run, watched


def test_a_simulated_day_takes_no_real_time() -> None:
    clock = Clock()
    fired: list[tuple[str, float]] = []

    async def main() -> float:
        loop = asyncio.get_running_loop()
        loop.call_later(100, lambda: fired.append(("timer", clock.now)))
        await asyncio.sleep(50)
        fired.append(("sleep", clock.now))
        await asyncio.sleep(86_400)
        return clock.now

    started = time.perf_counter()
    assert run(main(), clock) == 86_450
    assert fired == [("sleep", 50), ("timer", 100)]
    assert time.perf_counter() - started < 5


def test_a_timer_far_ahead_fires_where_a_nanosecond_is_below_a_floats_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 1.7e9 s (a trace in Unix time) the loop's nanosecond resolution vanishes in the float:
    the timer due now must still fire, not leave the loop selecting with timeout 0 for ever.
    (asyncio waits at most a day a select: some 20,000 of them to get there.)"""
    selects = 0
    select = clock_module._Selector.select

    def counted(self: clock_module._Selector, timeout: float | None = None) -> list[Any]:
        nonlocal selects
        selects += 1
        assert selects < 100_000, f"the loop spins at {self._clock.now!r}"
        return select(self, timeout)

    monkeypatch.setattr(clock_module._Selector, "select", counted)
    clock = Clock()

    async def main() -> float:
        await asyncio.sleep(1.7e9)
        await asyncio.sleep(100)
        return clock.now

    assert run(main(), clock) == pytest.approx(1.7e9 + 100)


def test_waiting_on_what_never_happens_is_stalled() -> None:
    async def main() -> None:
        await asyncio.Event().wait()

    with pytest.raises(Stalled):
        run(main(), Clock())


class _Broken(Exception):
    pass


def _fail() -> None:
    raise _Broken("lost part")


def test_a_callback_that_raises_stops_the_run_with_its_error() -> None:
    async def main() -> None:
        asyncio.get_running_loop().call_later(10, _fail)
        await asyncio.sleep(3600)

    with pytest.raises(_Broken, match="lost part"):
        run(main(), Clock())


def test_a_watched_task_that_fails_stops_the_run_while_main_waits_on_other_things() -> None:
    clock = Clock()

    async def part() -> None:
        await asyncio.sleep(5)
        _fail()

    async def main() -> None:
        watched(asyncio.get_running_loop().create_task(part()))
        await asyncio.sleep(3600)

    with pytest.raises(_Broken):
        run(main(), clock)
    assert clock.now == 5  # stopped when it failed, not at the end


def test_a_watched_task_cancelled_or_done_lets_the_run_finish() -> None:
    async def idle() -> None:
        await asyncio.sleep(3600)

    async def quick() -> int:
        return 1

    async def main() -> str:
        loop = asyncio.get_running_loop()
        cancelled = watched(loop.create_task(idle()))
        done = watched(loop.create_task(quick()))
        await asyncio.sleep(1)
        cancelled.cancel()
        await asyncio.sleep(1)
        return f"{done.result()} {cancelled.cancelled()}"

    assert run(main(), Clock()) == "1 True"


def test_a_failure_in_the_turn_main_ends_in_still_stops_the_run() -> None:
    async def main() -> int:
        asyncio.get_running_loop().call_soon(_fail)  # runs in the turn that ends `main`
        return 1

    with pytest.raises(_Broken):
        run(main(), Clock())
