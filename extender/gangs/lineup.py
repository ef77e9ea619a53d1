"""Who contends in the fair order, and at what rank: the lines `gangs.order` takes turns from.

A waiting gang is a `Contender` (since when it waits, and whether a rule refuses it before any
plan: backing off, no PodGroup). Within its queue it is ranked by the policy's job-order plugins
in tier order (a gang waiting longer than the starvation limit first, then PriorityClass, then
DRF dominant share), then by age, then in the order the cache saw them arrive; the limit is the
sla plugin's, or the PodGroup's own `sla-waiting-time` annotation. A gang whose queue is missing
or Closed is refused before any plan.

`Lineup` keeps per queue its contenders sorted by rank (`QueueLine`), and the refusals, from
walk to walk: a gang is put again only when what it is ranked by changed (`gangs.contending` says
which), so lining up costs what changed, not what waits. A walk reads the lines without taking
from them, as they stood when it began: the lineup copies a line a walk was handed before it
changes it, so a walk cannot read lines changed under it. Pure.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from extender.api.engine_settings import Ordering, WaitingGang
from extender.api.resources import Resources
from extender.gangs.fairness import dominant_share
from extender.gangs.members import GangView
from extender.gangs.queues import QueueView
from extender.gangs.refusals import Cause, Rejection


@dataclass(frozen=True)
class Contender:
    gang: GangView
    since: float
    blocked: Rejection | None = None  # refused before any plan (backing off, no PodGroup)
    asked: bool = True  # False: pending, but Lahar was not asked about it yet


def kept_or_new(
    kept: Contender | None, gang: GangView, since: float, blocked: Rejection | None
) -> Contender:
    """A gang Lahar was asked about, as a contender: the one `kept` while it is the same view,
    age and standing, else a new one."""
    if (
        kept is not None
        and kept.asked
        and kept.gang is gang
        and kept.since == since
        and kept.blocked is None
        and blocked is None
    ):
        return kept
    return Contender(gang, since, blocked)


@dataclass(frozen=True)
class Ranking:
    """What a gang's rank is worked out from, besides the gang: the order rules, the clock,
    what the schedulable nodes offer together (DRF's denominator) and the gang's priority."""

    ordering: Ordering
    now: float
    total: Resources
    priority_of: Callable[[GangView], int]


Entry = tuple[tuple[float, ...], Contender, bool]  # rank, contender, starving
Line = list[tuple[tuple[float, ...], str]]  # (rank, key), lowest first


class QueueLine:
    """One queue's contenders in line: all of them sorted by (rank, key) (`ranked`), its starving
    ones apart too (`starving`, in the same order), each one's entry by key, and `ruled`, those
    refused whatever the room (`GangView.largest_cpu` None: a rule may refuse them). Handed out
    by `Lineup.lines` and never changed after that (the lineup changes a copy)."""

    __slots__ = ("entries", "ranked", "ruled", "starving")

    def __init__(
        self, ranked: Line, starving: Line, entries: dict[str, Entry], ruled: set[str]
    ) -> None:
        self.ranked, self.starving, self.entries, self.ruled = ranked, starving, entries, ruled

    def copy(self) -> QueueLine:
        return QueueLine(
            list(self.ranked), list(self.starving), dict(self.entries), set(self.ruled)
        )


class Lineup:
    """The contenders in line per queue (`QueueLine`), and those refused before any plan;
    `starving`, the keys of the starving gangs in line; `floor` is the least cpu the largest
    member of a gang in line asks for.

    A walk reads the lines as they stood when it began (`lines`) while the lineup goes on
    changing for the next walk: a line handed out is copied before it changes (copy on write,
    in `_own`), so no change reaches the lines a walk holds, and only the lines that change
    between two walks are copied."""

    def __init__(self) -> None:
        self.refused: dict[str, Rejection] = {}
        self.starving: set[str] = set()
        self._queues: dict[str, QueueLine] = {}
        self._queue_of: dict[str, str] = {}  # key -> the queue it is in line in
        self._handed: set[str] = set()  # the queues whose line a walk may hold
        self._cpus: Counter[int] = Counter()  # of the gangs in line, `GangView.largest_cpu`

    @classmethod
    def of(
        cls, contenders: Iterable[Contender], queues: Mapping[str, QueueView], ranking: Ranking
    ) -> Lineup:
        lineup = cls()
        for contender in contenders:
            lineup.put(contender, queues, ranking)
        return lineup

    @property
    def floor(self) -> int | None:
        return min(self._cpus) if self._cpus else None

    def holds(self, lines: Mapping[str, QueueLine]) -> bool:
        """Whether `lines` (handed to a walk) are the lines as they stand: nothing was put in
        line or dropped since (a line handed out is copied before it changes)."""
        queues = self._queues
        return queues.keys() == lines.keys() and all(queues[q] is line for q, line in lines.items())

    def lines(self) -> dict[str, QueueLine]:
        """Each queue's line as it stands, for a walk: never changed after this."""
        self._handed = set(self._queues)
        return dict(self._queues)

    def put(self, contender: Contender, queues: Mapping[str, QueueView], ranking: Ranking) -> None:
        """Line the contender up (in place of what it was), or note why it is refused. The same
        contender at the same rank in the same line changes nothing (not even the line a walk
        holds: walks tell a lineup that moved from one that did not by its lines)."""
        gang = contender.gang
        refusal = contender.blocked or queue_refusal(gang, queues)
        if refusal is not None:
            self.drop(gang.key)
            self.refused[gang.key] = refusal
            return
        hungry = starving(contender, ranking.ordering, ranking.now)
        share_of = dominant_share(gang.allocated, ranking.total)
        priority = ranking.priority_of(gang)
        waiting = WaitingGang(gang.key, gang.queue, priority, share_of, contender.since, hungry)
        # Ties (gangs first seen at the same moment) go in the order they arrived.
        rank = (*(key(waiting) for key in ranking.ordering.job_keys), waiting.since, gang.arrival)
        if self._queue_of.get(gang.key) == gang.queue:
            was = self._queues[gang.queue].entries[gang.key]
            if was[1] is contender and was[0] == rank and was[2] == hungry:
                return
        self.drop(gang.key)
        line = self._own(gang.queue)
        insort(line.ranked, (rank, gang.key))
        if hungry:
            insort(line.starving, (rank, gang.key))
            self.starving.add(gang.key)
        line.entries[gang.key] = (rank, contender, hungry)
        self._queue_of[gang.key] = gang.queue
        cpu = gang.largest_cpu
        if cpu is not None:
            self._cpus[cpu] += 1
        else:
            line.ruled.add(gang.key)

    def drop(self, key: str) -> None:
        """The gang no longer contends (or is put again)."""
        self.refused.pop(key, None)
        queue = self._queue_of.pop(key, None)
        if queue is None:
            return
        line = self._own(queue)
        rank, contender, hungry = line.entries.pop(key)
        self.starving.discard(key)
        line.ruled.discard(key)
        for ranked in (line.ranked, line.starving) if hungry else (line.ranked,):
            del ranked[bisect_left(ranked, (rank, key))]
        if not line.ranked:
            del self._queues[queue]
            self._handed.discard(queue)
        cpu = contender.gang.largest_cpu
        if cpu is not None:
            self._cpus[cpu] -= 1
            if not self._cpus[cpu]:
                del self._cpus[cpu]

    def _own(self, queue: str) -> QueueLine:
        """Queue `queue`'s line, to change: a copy of it in place of one a walk may hold."""
        line = self._queues.get(queue)
        if line is None:
            line = self._queues[queue] = QueueLine([], [], {}, set())
        elif queue in self._handed:
            self._handed.discard(queue)
            line = self._queues[queue] = line.copy()
        return line


def starving(contender: Contender, ordering: Ordering, now: float) -> bool:
    if not contender.asked:
        return False  # the scheduler may never send it: no capacity is taken for it
    limit = starving_limit(contender.gang, ordering)
    return limit is not None and now - contender.since >= limit


def starving_limit(gang: GangView, ordering: Ordering) -> float | None:
    """How long the gang may wait before it starves: its PodGroup's `sla-waiting-time` when
    set, else the policy's limit; None when the policy has no starvation guard."""
    if ordering.starving_after is None:
        return None
    own = gang.sla_waiting_time
    return own if own is not None else ordering.starving_after


def queue_refusal(gang: GangView, queues: Mapping[str, QueueView]) -> Rejection | None:
    view = queues.get(gang.queue)
    if view is None:
        return Rejection(
            Cause.NO_QUEUE,
            f"gang {gang.key}: queue {gang.queue} does not exist; it waits until it is created",
        )
    if not view.leaf:
        return Rejection(
            Cause.QUEUE_NOT_LEAF,
            f"gang {gang.key}: queue {view.path} has child queues and takes no gangs itself: "
            "gangs go in leaf queues",
        )
    closed = view.closed_by
    if closed is not None:
        whose = f"queue {gang.queue}"
        if closed is not view:
            whose += f"'s ancestor {closed.path}"
        return Rejection(
            Cause.QUEUE_CLOSED,
            f"gang {gang.key}: {whose} is {closed.queue.status.state}: it admits nothing new "
            "(running work continues)",
        )
    return None
