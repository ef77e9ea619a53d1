"""The standby's watch on the leader: look every `INTERVAL` seconds, evict when `takeover` says.

A thin adapter around `server.takeover.decide`. Each look asks the app whether this replica leads
and is ready (`standing`); a ready standby then reads the followed Lease and, when another pod's
scheduler holds it, that pod, from the API server (a GET each: the extender's pod cache keeps no
container statuses), and hands what it saw to `decide`. A `TakeOver` is logged at WARNING and
carried out through the Eviction API (`evict`, the preemptor's: a PodDisruptionBudget holds);
the pod already gone is logged at INFO, a refusal at WARNING with the API server's reason, and
tried again later. A read that fails is a `Wait`, said at WARNING once (and at INFO when reads
work again). Nothing here raises: the task runs as long as the app.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from extender.api.log_fields import about_pod
from extender.server.preemptor import Evictor
from extender.server.takeover import (
    Look,
    Nothing,
    Outcome,
    PodSeen,
    Rule,
    TakeOver,
    Wait,
    Watch,
    decide,
    evicted,
    gone,
    holder_pod,
    lease_seen,
    pod_seen,
    refused,
)

log = logging.getLogger(__name__)
INTERVAL = 2.0  # seconds between looks
LeaseRead = Callable[[], Awaitable[dict[str, Any] | None]]  # the followed Lease; None: none
PodRead = Callable[[str, str], Awaitable[dict[str, Any] | None]]  # namespace, name; None: none
Standing = Callable[[], tuple[bool, str | None]]  # (leads, why not ready: None when ready)


class Watchdog:
    def __init__(
        self,
        rule: Rule,
        *,
        standing: Standing,
        read_lease: LeaseRead,
        read_pod: PodRead,
        evict: Evictor,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.rule, self.standing = rule, standing
        self.read_lease, self.read_pod, self.evict = read_lease, read_pod, evict
        self.interval, self.clock, self.wall = interval, clock, wall
        self.watch = Watch()
        self.on_evicted: Callable[[], None] = lambda: None
        self._trouble: str | None = None

    def attach(self) -> None:
        """Nothing to attach: it reads the API server, not the cache."""

    async def run(self) -> None:
        log.info(
            "watching the holder of Lease %s: evicting it when its extender has not been ready "
            "for %g s",
            self.rule.lease,
            self.rule.bound,
        )
        while True:
            await asyncio.sleep(self.interval)
            await self.step()

    async def step(self) -> Outcome:
        """One look, and what it decided (carried out)."""
        look = await self._look()
        outcome, watch = decide(self.rule, self.watch, look)
        self._say(self.watch, watch, outcome)
        self.watch = watch
        if isinstance(outcome, TakeOver):
            await self._take_over(outcome)
        return outcome

    async def _look(self) -> Look:
        leading, unready = self.standing()
        now, wall = self.clock(), self.wall()
        if leading or unready is not None:
            return Look(leading, unready, None, None, now, wall)
        try:
            found = await self.read_lease()
            lease = None if found is None else lease_seen(found)
            name = holder_pod(self.rule, lease, wall)
            pod: PodSeen | None = None
            if isinstance(name, str):
                read = await self.read_pod(self.rule.namespace, name)
                pod = None if read is None else pod_seen(read)
        except Exception as error:  # the API server: no news this time
            return Look(False, None, None, None, now, wall, trouble=self._troubled(error))
        if self._trouble is not None:
            log.info("reading Lease %s and its holder's pod works again", self.rule.lease)
            self._trouble = None
        return Look(False, None, lease, pod, now, wall)

    def _troubled(self, error: Exception) -> str:
        """A failing read, said once at WARNING while reads keep failing."""
        trouble = f"cannot read Lease {self.rule.lease} or its holder's pod: {error}"
        if self._trouble is None:
            log.warning("%s; retrying", trouble)
        self._trouble = trouble
        return trouble

    def _say(self, before: Watch, after: Watch, outcome: Outcome) -> None:
        """INFO when a leader's extender is first seen not ready and when it is ready again;
        the rest at DEBUG (every look)."""
        if before.since is None and after.since is not None and isinstance(outcome, Wait):
            log.info("%s (Lease %s)", outcome.reason, self.rule.lease)
        elif before.since is not None and after.uid == before.uid and isinstance(outcome, Nothing):
            log.info("%s again", outcome.why)
        elif isinstance(outcome, Wait | Nothing):
            log.debug("%s", outcome)

    async def _take_over(self, outcome: TakeOver) -> None:
        where = f"{outcome.namespace}/{outcome.pod}"
        log.warning("%s", outcome.message, extra=about_pod(where))
        try:
            done = await self.evict(outcome.namespace, outcome.pod, outcome.uid, False)
        except Exception as error:  # a PodDisruptionBudget (429), the API server
            log.warning(
                "cannot evict %s: %s; trying again in %g s",
                where,
                error,
                self.rule.retry,
                extra=about_pod(where),
            )
            self.watch = refused(self.rule, self.watch, self.clock())
            return
        if not done:
            log.info(
                "%s is gone already: its scheduler no longer holds the Lease",
                where,
                extra=about_pod(where),
            )
            self.watch = gone(self.watch)
            return
        self.watch = evicted(self.rule, self.watch, outcome.uid, self.clock())
        self.on_evicted()
