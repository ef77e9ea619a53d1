"""Waking parked pods: have the scheduler retry exactly the gangs Lahar would now accept.

kube-scheduler parks a pod every node rejected and retries it on a cluster event or a periodic
flush minutes away; Lahar's own changes (a gang admitted, a reservation released, a backoff
over, a PodGroup or Queue changed) are no cluster events. So on those, and when capacity frees,
the waker asks the gang rules which parked gangs the fair order lets in now (nothing is
reserved), and touches the annotation `lahar.io/retry` of their pending members, most deserving
first, which requeues them at once. Passes are debounced; a pod is touched
at most once per `min_interval`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from extender.cache.state import ClusterState
from extender.framework.gang import Gangs
from extender.framework.members import view_gang

log = logging.getLogger(__name__)
RETRY_ANNOTATION = "lahar.io/retry"
Patcher = Callable[[str, str, dict[str, str]], Awaitable[None]]  # namespace, name, annotations


class Waker:
    def __init__(
        self,
        state: ClusterState,
        gangs: Gangs,
        patch: Patcher,
        *,
        delay: float = 0.05,
        min_interval: float = 0.25,
    ) -> None:
        self.state, self.gangs, self.patch = state, gangs, patch
        self.delay, self.min_interval = delay, min_interval
        self.on_woken: Callable[[], None] = lambda: None
        self._queue: asyncio.Queue[str] = asyncio.Queue()  # keys of gangs to wake
        self._touched: dict[tuple[str, str], float] = {}
        self._pass: asyncio.TimerHandle | None = None

    def attach(self) -> None:
        """Listen to the gang rules and the state (call on the event loop)."""
        self.gangs.on_admitted.append(self.wake_gang)
        self.gangs.on_released.append(self._released)
        self.state.on_capacity_freed.append(self.poke)
        self.state.on_pod_group.append(lambda key: self.poke())

    def poke(self) -> None:
        """Something changed that may let a parked gang in: look soon (debounced)."""
        if self._pass is None:
            self._pass = asyncio.get_running_loop().call_later(self.delay, self._look)

    def wake_gang(self, key: str) -> None:
        """Have the gang's pending members requeued (by the background task: this may be called
        from a filter call, which must not walk the gang again)."""
        self._queue.put_nowait(key)

    def _released(self, key: str) -> None:
        self.poke()
        until = self.gangs.backoff_until.get(key)
        if until is not None:  # retry the gang itself when its backoff ends
            delay = max(0.0, until - self.gangs.clock()) + self.delay
            asyncio.get_running_loop().call_later(delay, self.poke)

    def _look(self) -> None:
        self._pass = None
        for key in self.gangs.admissible(self.state, self.state.view().nodes):
            log.info("gang %s is let in by the fair order now: waking its pending pods", key)
            self.wake_gang(key)

    async def run(self) -> None:
        """Touch the pending pods of queued gangs, one at a time, forever (a background task).

        It starts by waking every gang with pending members: this replica has just started to
        serve (a restart, or a standby taking over), and the scheduler parked whatever it could
        not place while no extender answered, which no cluster event may ever requeue."""
        for key in list(self.state.pod_groups):
            if view_gang(self.state, key).pending:
                self.wake_gang(key)
        while True:
            key = await self._queue.get()
            for pod in view_gang(self.state, key).pending:
                await self._touch(pod.metadata.namespace, pod.metadata.name)

    async def _touch(self, namespace: str, name: str) -> None:
        now = time.monotonic()
        if now - self._touched.get((namespace, name), -1e9) < self.min_interval:
            return
        self._touched[(namespace, name)] = now
        try:
            await self.patch(namespace, name, {RETRY_ANNOTATION: f"{time.time():.3f}"})
            self.on_woken()
        except Exception as error:  # a deleted pod, an API hiccup: the flush still retries
            log.info("could not wake pod %s/%s: %s", namespace, name, error)
        if len(self._touched) > 10_000:
            cutoff = now - self.min_interval
            self._touched = {k: t for k, t in self._touched.items() if t >= cutoff}
