"""A per-object work queue for reconcilers, on the event loop (client-go's workqueue semantics).

- Coalescing: a key is queued at most once; many changes to one job before a worker takes it are
  one reconcile.
- One worker per key: a key added while a worker holds it is queued again when that worker is
  done, never handed to a second worker at the same time.
- Retries with backoff: a handler that raises is retried after base x 2^(failures-1), capped;
  a success forgets the failures. A handler may also ask to be called again after a delay (a
  timeout that has not expired yet), which is not a failure.
- Bounded concurrency: `run(handler, workers)` starts exactly `workers` workers.

A handler's failure is logged by what it means: an API call that failed (`KubeError`: refused,
conflicting) or an API server out of reach is the cluster's, a WARNING line naming the object and
the reason; any other exception is a bug in Lahar, an ERROR with its traceback. Either is retried.
"Out of reach" is `kube.client.OUT_OF_REACH`: what the kubernetes client raises when no answer
came, not every `OSError` (a file Lahar cannot open is Lahar's own fault, an ERROR).
The keys are objects of one `kind` (`Job`, `Command`), which the log lines name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from extender.api.log_fields import Extra, about
from extender.kube import KubeError
from extender.kube.client import OUT_OF_REACH

log = logging.getLogger(__name__)
# What a handler may meet from the cluster, not a fault of its own: said in one line, retried.
CLUSTER_FAILURES: tuple[type[Exception], ...] = (KubeError, *OUT_OF_REACH)

Handler = Callable[[str], Awaitable[float | None]]  # returns: call again after N seconds, or None


class WorkQueue:
    def __init__(
        self, kind: str = "", *, base_delay: float = 0.25, max_delay: float = 60.0
    ) -> None:
        self.kind = kind
        self.base_delay, self.max_delay = base_delay, max_delay
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._active: set[str] = set()
        self._dirty: set[str] = set()
        self._failures: dict[str, int] = {}
        self._timers: dict[str, tuple[float, asyncio.TimerHandle]] = {}

    def __len__(self) -> int:
        return len(self._queued)

    def add(self, key: str) -> None:
        if key in self._active:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        """Queue `key` after `delay` seconds (the earliest of several requests wins)."""
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        self._timers[key] = (due, loop.call_at(due, self._fire, key))

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def retry(self, key: str) -> float:
        """Queue `key` again after its backoff; returns the delay."""
        count = self._failures[key] = self._failures.get(key, 0) + 1
        delay = min(self.base_delay * 2.0 ** (count - 1), self.max_delay)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        key = await self._ready.get()
        self._queued.discard(key)
        self._active.add(key)
        return key

    def done(self, key: str) -> None:
        self._active.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    async def run(self, handler: Handler, workers: int) -> None:
        """Process keys with `workers` concurrent workers, until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(self._work(handler))

    async def _work(self, handler: Handler) -> None:
        while True:
            key = await self.get()
            try:
                again = await handler(key)
            except CLUSTER_FAILURES as error:
                delay = self.retry(key)
                log.warning("%s: %s; retrying in %.1fs", key, error, delay, extra=self._about(key))
            except Exception:
                delay = self.retry(key)
                log.exception(
                    "%s: reconcile failed; retrying in %.1fs", key, delay, extra=self._about(key)
                )
            else:
                self.forget(key)
                if again is not None:
                    self.add_after(key, again)
            finally:
                self.done(key)

    def _about(self, key: str) -> Extra:
        return about(self.kind, key) if self.kind else {}
