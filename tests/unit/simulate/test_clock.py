"""The virtual-time loop: timers fire at their virtual moment, in order, without real waiting."""

from __future__ import annotations

import asyncio
import time

import pytest

from extender.simulate.clock import Clock, Stalled, run


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


def test_waiting_on_what_never_happens_is_stalled() -> None:
    async def main() -> None:
        await asyncio.Event().wait()

    with pytest.raises(Stalled):
        run(main(), Clock())
