"""Background writers that coalesce: many changes, one pass.

A `Coalesced` worker is only *poked* by changes; its task then waits `interval`, so that what else
changes meanwhile joins the same pass, and runs `flush` once. However busy the cluster, a pass
runs at most once per interval; an idle one runs none. A change somebody waits on (`hurry`: a
Job's controller creates its pods once the PodGroup shows its gang admitted) has the pass run
`soon` after it instead, with whatever else comes in that moment. No pass runs before `ready`
(the cache is whole). A pass that raises is logged and tried again after `retry_after`: a bug
must not end the writer. The status writer and the queue writer are two of these.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class Coalesced(abc.ABC):
    first_pass = False  # run a pass as soon as ready, before any poke
    soon = 0.02  # seconds a hurried pass waits for what comes with its change

    def __init__(self, *, ready: asyncio.Event | None, interval: float, retry_after: float) -> None:
        self.ready, self.interval, self.retry_after = ready, interval, retry_after
        self._wake: asyncio.Event | None = None
        self._hurried: asyncio.Event | None = None

    def attach(self) -> None:
        """Create the wake-up (call on the event loop); subclasses subscribe to changes."""
        self._wake, self._hurried = asyncio.Event(), asyncio.Event()

    def poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def hurry(self) -> None:
        """Poke, and have the pass run `soon` rather than after `interval`."""
        self.poke()
        if self._hurried is not None:
            self._hurried.set()

    async def _pause(self) -> None:
        """Wait `interval`, or `soon` once hurried."""
        assert self._hurried is not None
        try:
            await asyncio.wait_for(self._hurried.wait(), self.interval)
        except TimeoutError:
            return
        await asyncio.sleep(self.soon)

    def later(self, then: Callable[[], None]) -> None:
        """Call `then` after `retry_after` seconds (a failed write tried again)."""
        asyncio.get_running_loop().call_later(self.retry_after, then)

    async def run(self) -> None:
        """One pass per burst of pokes, forever (a background task)."""
        assert self._wake is not None, "attach() first"
        if self.ready is not None:
            await self.ready.wait()
        if self.first_pass:
            self._wake.set()
        while True:
            await self._wake.wait()
            await self._pause()  # what changes meanwhile joins this pass
            self._wake.clear()
            assert self._hurried is not None
            self._hurried.clear()
            try:
                await self.flush()
            except Exception:
                log.exception("%s: a pass failed; trying again later", type(self).__name__)
                self.later(self.poke)

    @abc.abstractmethod
    async def flush(self) -> None:
        """One pass: write what changed since the last one."""
