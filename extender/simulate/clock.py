"""An asyncio event loop on virtual time, so the simulation runs Lahar's asynchronous parts as
they are (members wait at the bind barrier on futures, which times out with `loop.call_later`).

The loop never waits: where a real loop would sleep until its next timer, this one moves its
clock to that timer at once. So a simulated hour takes as long as the work done in it, timers
fire in the order a real loop would fire them, and a run is deterministic. There is no I/O on
this loop: its selector only keeps the loop's own wake-up socket registered. When nothing is
ready and no timer is due the run is stuck (something waits on what can never happen): `Stalled`.
"""

from __future__ import annotations

import asyncio
import math
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
RESOLUTION = 1e-9  # the loop's clock resolution, in seconds


class Stalled(RuntimeError):
    """Nothing is ready and no timer is due: the simulation waits on what can never happen."""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Selector(selectors.BaseSelector):
    """Registers file objects (the loop's own wake-up socket) and never waits: a wait of t
    seconds moves the clock t seconds on."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._keys: dict[Any, selectors.SelectorKey] = {}

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        key = selectors.SelectorKey(fileobj, fd, events, data)
        self._keys[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._keys.pop(fileobj)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            raise Stalled("nothing is ready and no timer is due")
        now = self._clock.now + max(0.0, timeout)
        if now + RESOLUTION == now:
            # Past about 1e7 s a nanosecond is below a float's step: the loop, which fires the
            # timers due before now + RESOLUTION, would never fire the one due now; a step on.
            now = math.nextafter(now, math.inf)
        self._clock.now = now
        return []

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._keys

    def close(self) -> None:
        self._keys.clear()


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: Clock) -> None:
        super().__init__(_Selector(clock))
        self._clock = clock
        self._clock_resolution = RESOLUTION  # timers fire at their exact virtual moment

    def time(self) -> float:
        return self._clock.now


def run(main: Coroutine[Any, Any, T], clock: Clock) -> T:
    """Run `main` to the end on a fresh loop over `clock`. A callback that raises, or a task
    `watched` that fails, stops the run with its exception: figures from a simulation that lost
    a part of itself on the way would be wrong without a word."""
    loop = VirtualLoop(clock)
    failures: list[BaseException] = []

    def failed(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        failures.append(error if isinstance(error, BaseException) else Failed(context["message"]))
        loop.stop()

    loop.set_exception_handler(failed)
    try:
        try:
            result = loop.run_until_complete(main)
        except RuntimeError:
            if not failures:  # (else: the loop was stopped before `main` completed)
                raise
        if failures:  # (also when `main` completed in the turn a failure stopped the loop)
            raise failures[0]
        return result
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()


def watched(task: asyncio.Task[T]) -> asyncio.Task[T]:
    """`task`, its failure stopping `run` (a task's exception is otherwise kept until someone
    asks for its result, which a background task's nobody does)."""
    task.add_done_callback(_raise_failure)
    return task


def _raise_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        raise error  # to the loop's exception handler: `run` stops with it


class Failed(RuntimeError):
    """The loop reported an error that carried no exception (its message says what)."""
