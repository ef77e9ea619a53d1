"""Carrying out Lahar's preemptions: evict the chosen victims whole, rate-limited, and say so.

The background task wakes when a gang is refused for lack of capacity (and every `interval`
seconds), asks `framework.preemption` for the next preemption and carries it out: a dry-run
eviction of every victim pod first, so a PodDisruptionBudget that forbids one forbids the whole
preemption (no victim gang is left broken); then the evictions. Events on the preemptor's
PodGroup (Preempting) and on each victim's (Preempted) name both sides; a refused preemption is
an Event too (PreemptionBlocked). At most one preemption per `interval`; a gang that had
victims evicted is not preempted for again until `settle` seconds pass (its victims terminate).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from extender.api.scheduling import PodGroup
from extender.cache.state import ClusterState
from extender.framework.gang import Gangs
from extender.framework.group_status import Event
from extender.framework.members import Rejection
from extender.framework.preemption import WANTS_CAPACITY, Preemption, next_preemption
from extender.framework.victims import Rules

log = logging.getLogger(__name__)
Evictor = Callable[[str, str, str, bool], Awaitable[None]]  # namespace, name, uid, dry_run
EventSink = Callable[[PodGroup, Event], Awaitable[None]]


class Preemptor:
    def __init__(
        self,
        state: ClusterState,
        gangs: Gangs,
        evict: Evictor,
        record: EventSink,
        *,
        interval: float,
        rules: Rules,
        ready: asyncio.Event,
        settle: float = 30.0,
    ) -> None:
        self.state, self.gangs, self.evict, self.record = state, gangs, evict, record
        self.ready = ready
        self.interval, self.rules, self.settle = interval, rules, settle
        self.on_evicted: Callable[[int], None] = lambda pods: None
        self._wake = asyncio.Event()
        self._recent: dict[str, float] = {}  # preemptor key -> when its victims were evicted

    def attach(self) -> None:
        self.gangs.on_rejected.append(self._rejected)

    def _rejected(self, key: str, why: Rejection) -> None:
        if why.cause in WANTS_CAPACITY:
            self._wake.set()

    async def run(self) -> None:
        await self.ready.wait()  # never decide on a half-listed cluster
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)
            self._wake.clear()
            now = time.monotonic()
            self._recent = {k: t for k, t in self._recent.items() if now - t < self.settle}
            preemption = next_preemption(
                self.state, self.gangs, self.state.view().nodes, self.rules, skip=self._recent
            )
            if preemption is not None:
                await self.carry_out(preemption)
                await asyncio.sleep(self.interval)  # the rate limit

    async def carry_out(self, preemption: Preemption) -> bool:
        """Evict the victims (all or none); report it. Whether they were evicted."""
        key = preemption.preemptor.key
        pods = [pod for unit in preemption.victims for pod, _ in unit.pods]
        try:
            for pod in pods:
                meta = pod.metadata
                await self.evict(meta.namespace, meta.name, meta.uid, True)
        except Exception as error:  # a PDB, or the API: nothing evicted
            message = f"gang {key}: cannot preempt: {error}"
            log.warning("%s", message)
            self._recent[key] = time.monotonic()
            await self._report(key, Event("Warning", "PreemptionBlocked", message))
            return False
        log.info("gang %s: %s", key, preemption.message)
        self._recent[key] = time.monotonic()
        await self._report(key, Event("Normal", "Preempting", preemption.message))
        for unit in preemption.victims:
            what = "whole" if unit.whole else "one member beyond its minMember"
            await self._report(
                unit.key,
                Event("Warning", "Preempted", f"evicted ({what}) so that gang {key} fits"),
            )
        evicted = 0
        for pod in pods:
            meta = pod.metadata
            try:
                await self.evict(meta.namespace, meta.name, meta.uid, False)
                evicted += 1
            except Exception as error:  # allowed a moment ago: say so, go on with the rest
                log.warning("gang %s: evicting victim %s failed: %s", key, pod.key, error)
        self.on_evicted(evicted)
        return True

    async def _report(self, key: str, event: Event) -> None:
        group = self.state.pod_groups.get(key)
        if group is None:
            return
        try:
            await self.record(group, event)
        except Exception as error:  # an Event is worth a log line, not a failed preemption
            log.info("could not record %s on %s: %s", event.reason, key, error)
