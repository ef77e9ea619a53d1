"""Lahar's preemption loop, the one the extender and the simulator both run: when to look for a
preemption, and what to do with the one found.

The policy's `PreemptionSettings` say how often (`interval`) and who may be evicted (`rules`).
The loop wakes when a gang is refused for want of capacity (`attach`), when asked (`wake`) and,
`polling`, every `interval` seconds besides. A pass looks only when some gang waits and the fair
order moved since a pass found nothing in it. It asks `plan.candidates` for the gangs short of
capacity, most deserving first (`pausing`: with a `sleep(0)` between gangs, so that other work
runs meanwhile), and hands the first preemption found to `carry_out`; then it sleeps `interval`
seconds, so at most one preemption is carried out per interval. A preemption `carry_out` refuses (a
PodDisruptionBudget forbids evicting a victim: nothing was evicted) is not looked for again for
its gang for `blocked_for` seconds. A pass looks when some gang was refused, or when Lahar's gate
holds some gang's members (in a full cluster the walk may record no refusal for those).

Whatever acts on the world is injected: `carry_out` (the extender's through the Eviction API, the
simulator's on its simulated cluster), `sleep` and `clock` (asyncio's and the monotonic clock, or
the simulation's virtual time), and `failed`, told of a pass that raised (the extender logs it
and goes on; without it the error ends the loop: the simulator's figures would be wrong without
a word). Pure: no I/O of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from extender.api.engine_settings import PreemptionSettings
from extender.cache.state import ClusterState
from extender.gangs.events import GangRejected
from extender.gangs.ledger import Gangs
from extender.gangs.refusals import WANTS_CAPACITY
from extender.preemption.plan import Preemption, candidates

CarryOut = Callable[[Preemption], Awaitable[bool]]  # False: refused, nothing evicted
Sleep = Callable[[float], Awaitable[None]]
Now = Callable[[], float]  # seconds, on the time `Sleep` sleeps by


class PreemptionLoop:
    def __init__(
        self,
        state: ClusterState,
        gangs: Gangs,
        settings: PreemptionSettings,
        *,
        carry_out: CarryOut,
        sleep: Sleep,
        clock: Now,
        failed: Callable[[Exception], None] | None = None,
        polling: bool = True,
        pausing: bool = True,
        blocked_for: float = 60.0,
    ) -> None:
        self.state, self.gangs, self.settings = state, gangs, settings
        self.carry_out, self.sleep, self.clock, self.failed = carry_out, sleep, clock, failed
        self.polling, self.pausing, self.blocked_for = polling, pausing, blocked_for
        self._wake = asyncio.Event()
        self._blocked: dict[str, float] = {}  # gang -> until when a refused eviction holds
        self._fruitless: int | None = None  # the order whose pass found nothing to do

    def attach(self) -> None:
        """Wake whenever a gang is refused for want of capacity."""
        self.gangs.events.subscribe(GangRejected, self._rejected)

    def _rejected(self, event: GangRejected) -> None:
        if event.rejection.cause in WANTS_CAPACITY:
            self._wake.set()

    def wake(self) -> None:
        """Look for a preemption now."""
        self._wake.set()

    async def run(self) -> None:
        """Pass after pass, for as long as the task runs."""
        while True:
            await self._woken()
            try:
                if await self.one_pass():
                    await self.sleep(self.settings.interval)  # the rate limit
            except Exception as error:  # told (the extender's loop must not end for good)
                if self.failed is None:
                    raise
                self.failed(error)

    async def _woken(self) -> None:
        if self.polling:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.settings.interval)
        else:
            await self._wake.wait()
        self._wake.clear()

    async def one_pass(self) -> bool:
        """Look for one preemption and carry it out; whether victims were evicted."""
        if not self.gangs.refused() and not self.gangs.holding(self.state):
            return False  # nobody waits: nobody to preempt for (and no walk to take)
        order = self.gangs.order(self.state, self.state.view().nodes)
        if order.number == self._fruitless:
            return False  # nothing moved since a pass found nothing
        now = self.clock()
        self._blocked = {k: t for k, t in self._blocked.items() if t > now}
        blocked = frozenset(self._blocked)
        for preemption in candidates(self.state, self.gangs, order, self.settings.rules, blocked):
            if preemption is not None:
                if await self.carry_out(preemption):
                    return True
                self._blocked[preemption.preemptor.key] = self.clock() + self.blocked_for
                return False
            if self.pausing:
                await self.sleep(0)  # let other work in between gangs
        self._fruitless = order.number
        return False
