"""Carrying out Lahar's preemptions on the cluster: evict the chosen victims whole, and say so.

When and for whom is `preemption.loop`'s (woken when a gang is refused for lack of capacity, when
the preempt verb hands a gang over, and every `interval` seconds; at most one preemption per
`interval`); this module runs it once this replica serves, and gives it real eviction and time:

- a dry-run eviction of every victim pod first, so a PodDisruptionBudget that forbids one
  forbids the whole preemption and no victim gang is left broken (a PreemptionBlocked Event;
  the loop does not preempt for that gang again for `blocked_for` seconds);
- then the evictions, through the Eviction API; Events on the preemptor's PodGroup
  (Preempting) and on each victim's (Preempted) say what was evicted, after the fact.

Victims being evicted count as capacity about to be free, so a gang is not preempted for twice.
Every victim is marked going in the cluster state (`ClusterState.evicting`) before the first is
evicted: the watch shows a victim gone only a moment after its Job's controller may have made
its replacement, and until then the victim's gang would stand on it and let the replacement
bind on the room freed for the preemptor. A victim whose eviction fails is unmarked.
`on_evicted` hears how many pods went, and why: `preempt` for a victim of the preemptor's own
queue, `reclaim` for one of another queue (as Volcano's preempt and reclaim actions divide them).
It hears of each pod once, whether Lahar evicted it or proposed it to the scheduler, which
deletes it: the scheduler calls the preempt verb again for each member of a gang and retries
while the victims terminate, and each answer names them again. The victims told of are kept by
UID in a bounded LRU (`TOLD`), far more than one preemption's victims and its repeats.
An error in a pass is logged; the loop goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from cachetools import LRUCache

from extender.api.log_fields import about_gang
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, Preemption, Unit
from extender.server.group_status import PodGroupEvent

log = logging.getLogger(__name__)
# namespace, name, uid, dry_run -> whether the pod was evicted (False: it was already gone)
Evictor = Callable[[str, str, str, bool], Awaitable[bool]]
Announce = Callable[[str, PodGroupEvent], None]  # an Event on a gang's PodGroup
TOLD = 4096  # victims remembered as counted, by pod UID


class Preemptor:
    def __init__(
        self,
        state: ClusterState,
        engine: Engine,
        evict: Evictor,
        announce: Announce,
        *,
        ready: asyncio.Event,
    ) -> None:
        self.state, self.engine = state, engine
        self.evict, self.announce, self.ready = evict, announce, ready
        self.on_evicted: Callable[[str, int], None] = lambda reason, pods: None
        self._told: LRUCache[str, None] = LRUCache(maxsize=TOLD)  # victims counted, by UID

    def attach(self) -> None:
        """Set up the engine's preemption loop, which carries out its choices here."""
        self.engine.start_preemption(
            self.state, carry_out=self.carry_out, sleep=asyncio.sleep, failed=_logged
        )

    def wake(self) -> None:
        """Look for a preemption now (the scheduler asked to preempt for a gang's pod)."""
        self.engine.wake_preemption()

    async def run(self) -> None:
        await self.ready.wait()  # never decide on a half-listed cluster
        await self.engine.preempting()

    async def carry_out(self, preemption: Preemption) -> bool:
        """Evict the victims (all or none, as far as a dry run can tell); report what happened.
        Whether they were evicted (False: a dry run was refused, nobody was)."""
        key = preemption.preemptor.key
        subject = about_gang(key, queue=preemption.preemptor.queue)
        try:
            for unit in preemption.victims:
                for pod, _ in unit.pods:
                    meta = pod.metadata
                    await self.evict(meta.namespace, meta.name, meta.uid, True)
        except Exception as error:  # a PDB, or the API: nothing evicted
            message = f"gang {key}: cannot preempt: {error}"
            log.warning("%s", message, extra=subject)
            self.announce(key, PodGroupEvent("Warning", "PreemptionBlocked", message))
            return False
        log.info("gang %s: %s", key, preemption.message, extra=subject)
        self.announce(key, PodGroupEvent("Normal", "Preempting", preemption.message))
        victims = [pod.metadata.uid for unit in preemption.victims for pod, _ in unit.pods]
        for uid in victims:  # every victim going before the first is evicted
            self.state.evicting(uid)
        gone: set[str] = set()  # evicted, or gone already
        try:
            for unit in preemption.victims:
                evicted: list[str] = []
                for pod, _ in unit.pods:
                    meta = pod.metadata
                    try:
                        if await self.evict(meta.namespace, meta.name, meta.uid, False):
                            evicted.append(meta.uid)
                    except Exception as error:  # allowed a moment ago: stop on this gang, say so
                        log.warning(
                            "gang %s: evicting victim %s failed: %s",
                            key,
                            pod.key,
                            error,
                            extra=subject,
                        )
                        break
                    gone.add(meta.uid)
                self._count(_reason(preemption, unit), evicted)
                self._preempted(unit, f"{len(evicted)} of {len(unit.pods)} pods evicted", key)
        finally:
            for uid in victims:  # not evicted: it stays
                if uid not in gone:
                    self.state.kept(uid)
        return True

    def proposed(self, preemption: Preemption) -> None:
        """The preempt verb answered the scheduler with these victims: it evicts them; say so."""
        key = preemption.preemptor.key
        message = f"{preemption.message} (through the scheduler's preemption)"
        subject = about_gang(key, queue=preemption.preemptor.queue)
        log.info("gang %s: %s", key, message, extra=subject)
        self.announce(key, PodGroupEvent("Normal", "Preempting", message))
        for unit in preemption.victims:
            self._preempted(unit, f"{len(unit.pods)} pods preempted by the scheduler", key)
            self._count(_reason(preemption, unit), (pod.metadata.uid for pod, _ in unit.pods))

    def _count(self, reason: str, uids: Iterable[str]) -> None:
        """Tell `on_evicted` of the victims not told of before."""
        new = [uid for uid in uids if uid not in self._told]
        for uid in new:
            self._told[uid] = None
        if new:
            self.on_evicted(reason, len(new))

    def _preempted(self, unit: Unit, done: str, key: str) -> None:
        what = "whole" if unit.whole else "one member beyond its minMember"
        self.announce(
            unit.key,
            PodGroupEvent("Warning", "Preempted", f"{done} ({what}) so that gang {key} fits"),
        )


def _reason(preemption: Preemption, unit: Unit) -> str:
    """`preempt` when the victim is of the preemptor's queue, else `reclaim`."""
    return "preempt" if unit.queue == preemption.preemptor.queue else "reclaim"


def _logged(error: Exception) -> None:
    """A pass failed: a bug must not end preemption for good, so say so and go on."""
    log.error("a preemption pass failed", exc_info=error)
