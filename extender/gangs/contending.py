"""The gangs that contend in the fair order, kept from walk to walk with their `Lineup`.

A walk of the fair order takes turns among the gangs that wait: those the ledger refused, the one
being asked about, and the pending gangs of the schedulers Lahar serves that it was not asked
about yet. Those contend too, so the order does not depend on which pod the scheduler happens to
try first; they wait since first seen, never drain and are never preempted for, and one not
asked about within `reservation_timeout` stops contending until it is (the scheduler may never
send it: rules Lahar does not model). A gang whose members Lahar's scheduling gate holds
(`GangView.held`) cannot be asked about until Lahar admits it, so it contends as if asked, from
when first seen, for as long as it waits.

Looking at every one of them at each walk would cost what waits (thousands of gangs in a full
cluster), though between two walks only a few change. So `Contending` keeps the contenders and
looks again only at the gangs that may have changed since the last walk:

- whose pods or PodGroup changed (the cluster state's gang change log);
- that the ledger refused anew, admitted, released, backed off or forgot (`touch`);
- whose standing moves with the clock: a gang starts starving, a backoff ends, a gang never
  asked about stops contending (a heap of those moments, read at each walk);
- every gang, when what all ranks depend on changed (queues or PriorityClasses, the nodes'
  total, the schedulers Lahar serves, the order rules) or the change log no longer reaches back.

A gang looked at again contends exactly as it would were every gang looked at (`_standing`);
the unit tests hold the two equal. What it reads of the ledger's records (refused, admitted,
backing off) it reads through `Records`, the ledger's reading methods, not its fields. Pure: the
clock is handed in.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Protocol

from extender.cache.state import ClusterState
from extender.gangs.lineup import Contender, Lineup, Ranking, kept_or_new, starving_limit
from extender.gangs.members import FollowsGangs, GangView, Unplaced, refusal_before_plan, view_gang
from extender.gangs.queues import QueueView
from extender.gangs.refusals import Refusal, Rejection


class Records(Protocol):
    """What lining up reads of the ledger's records (`gangs.ledger.Gangs`' reading methods): the
    gangs it refused and why, since when (`Refusal.since`); those it admitted; when a gang's
    backoff ends."""

    def refused(self) -> AbstractSet[str]: ...

    def refusal(self, key: str) -> Refusal | None: ...

    def admitted(self) -> AbstractSet[str]: ...

    def backoff_ends(self, key: str) -> float | None: ...


class Contending(FollowsGangs):
    def __init__(self) -> None:
        super().__init__()
        self.lineup = Lineup()
        self.contenders: dict[str, Contender] = {}  # by key, as the last walk lined them up
        self.pending_since: dict[str, float] = {}  # contenders never asked: since first seen
        self._unplaced = Unplaced()
        self._dirty: set[str] = set()  # gangs to look at again
        self._everyone = True  # look at every gang at the next walk
        self._basis: tuple[object, ...] = ()
        self._moments: list[tuple[float, str]] = []  # (when, gang): its standing moves then
        self._moments_of: dict[str, tuple[float, ...]] = {}  # each gang's current moments
        self._recheck: set[str] = set()

    def touch(self, key: str) -> None:
        """The ledger changed what it knows of the gang: look at it again at the next walk."""
        self._dirty.add(key)

    def sync(
        self,
        state: ClusterState,
        queues: Mapping[str, QueueView],
        ranking: Ranking,
        *,
        asking: GangView | None,
        records: Records,
        backoff: float,
        schedulers: frozenset[str],
        timeout: float,
    ) -> tuple[list[str], list[str]]:
        """Bring the contenders and their lineup up to `ranking.now`, as the ledger's `records`
        say. The keys of the gangs that stopped contending, and of those among the refused with
        nothing pending any more, for the ledger to forget. `backoff`: the seconds a backoff
        lasts (what a gang backing off is told)."""
        now = ranking.now
        basis = (state.stamp.queues, ranking.total, schedulers, ranking.ordering, timeout)
        if basis != self._basis:
            self._basis, self._everyone = basis, True
        self.catch_up(state)
        self._unplaced.catch_up(state)
        while self._moments and self._moments[0][0] <= now:
            self._dirty.add(heapq.heappop(self._moments)[1])
        self._dirty |= self._recheck
        self._recheck = set()
        keys: Iterable[str]
        if self._everyone:
            self._everyone = False
            asked = [asking.key] if asking is not None else []
            unasked = self._unplaced.keys(state)
            keys = dict.fromkeys([*records.refused(), *asked, *unasked, *self.contenders])
        else:
            if asking is not None:
                self._dirty.add(asking.key)
            keys = sorted(self._dirty)  # (in an order that does not depend on hashing)
        self._dirty = set()
        gone: list[str] = []
        finished: list[str] = []
        admitted = records.admitted()
        for key in keys:
            gang = asking if asking is not None and asking.key == key else view_gang(state, key)
            waiting, backoff_ends = records.refusal(key), records.backoff_ends(key)
            contender = self._standing(
                gang,
                now,
                asked=gang is asking,
                waiting=waiting,
                admitted=key in admitted,
                schedulers=schedulers,
                timeout=timeout,
                blocked=refusal_before_plan(gang, backoff_ends, now, backoff),
            )
            if contender is None:
                if waiting is not None:
                    finished.append(key)
                self._moments_of.pop(key, None)
                if self.contenders.pop(key, None) is not None:
                    self.lineup.drop(key)
                    gone.append(key)
                continue
            self.contenders[key] = contender
            self.lineup.put(contender, queues, ranking)
            self._note_moments(contender, ranking, backoff_ends, timeout)
        return gone, finished

    def _standing(
        self,
        gang: GangView,
        now: float,
        *,
        asked: bool,
        waiting: Refusal | None,
        admitted: bool,
        schedulers: frozenset[str],
        timeout: float,
        blocked: Rejection | None,
    ) -> Contender | None:
        """How the gang contends now, if it does (`blocked`: why it waits before any plan):
        refused before (from when it was first refused), asked about now (from when first seen),
        or never asked (from when first seen, for `timeout`). A refused gang with nothing pending
        any more does not."""
        key = gang.key
        if waiting is not None:
            self.pending_since.pop(key, None)
            if not gang.pending:
                return None  # nothing of it waits any more
            return kept_or_new(self.contenders.get(key), gang, waiting.since, blocked)
        unasked = (
            key in self._unplaced
            and not admitted
            and not schedulers.isdisjoint(gang.asking_schedulers)
        )
        if not unasked:
            since = self.pending_since.pop(key, now)  # (as first seen, if it was)
            return Contender(gang, since, blocked) if asked else None
        since = self.pending_since.setdefault(key, now)
        if asked or gang.held:  # (held by Lahar's gate: Lahar asks for the scheduler)
            return Contender(gang, since, blocked)  # it keeps its age
        if now - since < timeout:
            return Contender(gang, since, blocked, asked=False)
        return None

    def _note_moments(
        self, contender: Contender, ranking: Ranking, backoff: float | None, timeout: float
    ) -> None:
        """When the contender's standing moves with the clock: it stops contending (never
        asked), it starts starving, its backoff ends."""
        now, key = ranking.now, contender.gang.key
        moments = []
        if not contender.asked:
            moments.append(contender.since + timeout)
        limit = starving_limit(contender.gang, ranking.ordering)
        if limit is not None and contender.since + limit > now:
            moments.append(contender.since + limit)
        elif limit is not None and now - contender.since < limit:
            self._recheck.add(key)  # not starving yet, by rounding: look again at each walk
        if backoff is not None and backoff > now:
            moments.append(backoff)
        self._moments_of[key] = tuple(moments)
        for moment in moments:
            heapq.heappush(self._moments, (moment, key))
        if len(self._moments) > 4 * len(self._moments_of) + 64:  # (mostly stale): anew
            self._moments = [(m, k) for k, ms in self._moments_of.items() for m in ms]
            heapq.heapify(self._moments)

    def next_moment(self, now: float) -> float:
        """The first moment after `now` a contender's standing moves (inf: none)."""
        moments = self._moments
        while moments and moments[0][0] not in self._moments_of.get(moments[0][1], ()):
            heapq.heappop(moments)  # stale: the gang was looked at again since
        return moments[0][0] if moments else float("inf")

    def _start_over(self) -> None:
        self._everyone = True

    def _changed(self, state: ClusterState, key: str) -> None:
        self._dirty.add(key)
