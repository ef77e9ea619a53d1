"""Carrying out Lahar's preemptions: evict the chosen victims whole, rate-limited, and say so.

The background task wakes when a gang is refused for lack of capacity (and every `interval`
seconds); when the fair order moved since its last pass found nothing, it asks
`preemption.plan` for victims for the gangs short of capacity, most deserving first
(yielding to the event loop between gangs), and carries out the first preemption found:

- a dry-run eviction of every victim pod first, so a PodDisruptionBudget that forbids one
  forbids the whole preemption and no victim gang is left broken (PreemptionBlocked Event;
  that gang is not preempted for again for `blocked_for` seconds);
- then the evictions, through the Eviction API; Events on the preemptor's PodGroup
  (Preempting) and on each victim's (Preempted) say what was evicted, after the fact.

Victims being evicted count as capacity about to be free, so a gang is not preempted for twice.
At most one preemption per `interval`. An error in a pass is logged; the task goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from extender.cache.state import ClusterState
from extender.gangs.group_status import PodGroupEvent
from extender.gangs.ledger import Gangs
from extender.gangs.members import WANTS_CAPACITY, Rejection
from extender.preemption.plan import Preemption, candidates
from extender.preemption.victims import Rules, Unit

log = logging.getLogger(__name__)
# namespace, name, uid, dry_run -> whether the pod was evicted (False: it was already gone)
Evictor = Callable[[str, str, str, bool], Awaitable[bool]]
Announce = Callable[[str, PodGroupEvent], None]  # an Event on a gang's PodGroup


class Preemptor:
    def __init__(
        self,
        state: ClusterState,
        gangs: Gangs,
        evict: Evictor,
        announce: Announce,
        *,
        interval: float,
        rules: Rules,
        ready: asyncio.Event,
        blocked_for: float = 60.0,
    ) -> None:
        self.state, self.gangs, self.evict, self.announce = state, gangs, evict, announce
        self.interval, self.rules, self.ready, self.blocked_for = (
            interval,
            rules,
            ready,
            blocked_for,
        )
        self.on_evicted: Callable[[int], None] = lambda pods: None
        self._wake = asyncio.Event()
        self._blocked: dict[str, float] = {}  # gang -> until when a PDB refusal holds
        self._fruitless: int | None = None  # the order whose pass found nothing to do

    def attach(self) -> None:
        self.gangs.on_rejected.append(self._rejected)

    def _rejected(self, key: str, why: Rejection) -> None:
        if why.cause in WANTS_CAPACITY:
            self._wake.set()

    def wake(self) -> None:
        """Look for a preemption now (the scheduler asked to preempt for a gang's pod)."""
        self._wake.set()

    async def run(self) -> None:
        await self.ready.wait()  # never decide on a half-listed cluster
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)
            self._wake.clear()
            try:
                if await self.one_pass():
                    await asyncio.sleep(self.interval)  # the rate limit
            except Exception:  # a bug must not end preemption for good: say so, go on
                log.exception("a preemption pass failed")

    async def one_pass(self) -> bool:
        """Look for one preemption and carry it out; whether victims were evicted."""
        if not self.gangs.refused():
            return False  # nobody was refused: nobody to preempt for (and no walk to take)
        order = self.gangs.order(self.state, self.state.view().nodes)
        if order.number == self._fruitless:
            return False  # nothing moved since a pass found nothing
        now = time.monotonic()
        self._blocked = {k: t for k, t in self._blocked.items() if t > now}
        blocked = frozenset(self._blocked)
        for preemption in candidates(self.state, self.gangs, order, self.rules, blocked):
            if preemption is not None:
                return await self.carry_out(preemption)
            await asyncio.sleep(0)  # let filter and bind calls in between gangs
        self._fruitless = order.number
        return False

    async def carry_out(self, preemption: Preemption) -> bool:
        """Evict the victims (all or none, as far as a dry run can tell); report what happened."""
        key = preemption.preemptor.key
        try:
            for unit in preemption.victims:
                for pod, _ in unit.pods:
                    meta = pod.metadata
                    await self.evict(meta.namespace, meta.name, meta.uid, True)
        except Exception as error:  # a PDB, or the API: nothing evicted
            message = f"gang {key}: cannot preempt: {error}"
            log.warning("%s", message)
            self._blocked[key] = time.monotonic() + self.blocked_for
            self.announce(key, PodGroupEvent("Warning", "PreemptionBlocked", message))
            return False
        log.info("gang %s: %s", key, preemption.message)
        self.announce(key, PodGroupEvent("Normal", "Preempting", preemption.message))
        evicted = 0
        for unit in preemption.victims:
            done = 0
            for pod, _ in unit.pods:
                meta = pod.metadata
                try:
                    done += await self.evict(meta.namespace, meta.name, meta.uid, False)
                except Exception as error:  # allowed a moment ago: stop on this gang, say so
                    log.warning("gang %s: evicting victim %s failed: %s", key, pod.key, error)
                    break
            evicted += done
            self._preempted(unit, f"{done} of {len(unit.pods)} pods evicted", key)
        self.on_evicted(evicted)
        return True

    def proposed(self, preemption: Preemption) -> None:
        """The preempt verb answered the scheduler with these victims: it evicts them; say so."""
        key = preemption.preemptor.key
        message = f"{preemption.message} (through the scheduler's preemption)"
        log.info("gang %s: %s", key, message)
        self.announce(key, PodGroupEvent("Normal", "Preempting", message))
        for unit in preemption.victims:
            self._preempted(unit, f"{len(unit.pods)} pods preempted by the scheduler", key)
        self.on_evicted(sum(len(unit.pods) for unit in preemption.victims))

    def _preempted(self, unit: Unit, done: str, key: str) -> None:
        what = "whole" if unit.whole else "one member beyond its minMember"
        self.announce(
            unit.key,
            PodGroupEvent("Warning", "Preempted", f"{done} ({what}) so that gang {key} fits"),
        )
