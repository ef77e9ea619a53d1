"""The admission order: which waiting gangs a batch scheduler would admit now, and in what order.

The stock kube-scheduler picks which pod to ask about; Lahar decides whether its gang may go. Once
per cluster change, a `Walk` takes turns among every gang that waits (plus the one being asked
about), as Volcano's allocate action does:

1. queues by their share of what they deserve, lowest first, re-ranked after every admission
   (so two saturated queues weighted 1:3 end up allocated 1:3); in a queue tree, level by level
   from the top: the top-level branch least far into its share, then within it the child least
   far into its own, down to a leaf queue (Volcano's hierarchical order);
2. within a queue, jobs in their rank (`gangs.lineup`: starving first, then PriorityClass,
   then DRF dominant share, then age).

Each gang in turn is planned on the capacity that admitted gangs and the gangs before it leave
(`Turn.slots`). One that does not fit claims nothing, so capacity is never left idle while a
more deserving gang cannot use it (backfill), except for a *starving* gang refused for want of
capacity: it takes the free capacity of the nodes it is draining toward (`Turn.targets`), so
small gangs stop taking what it needs, until it fits (`gangs.drain`). A gang the walk
passed over because others came first says who.

Once no node has the cpu for the largest member of any gang in line (in a full cluster, most of
a long line), the rest of the walk changes nothing: every turn is a refusal, a starving gang
takes nothing (nobody in line could take what is free) and aims where it did before (the first
time, where a drain would), and the others' refusals are worked out when read (`_Rest`): the
walk hands them over as stretches of the lines, without looking at them one by one.
Queue rules refuse before any plan: a Closed queue admits nothing new, a missing queue nothing
(`gangs.lineup`), and a gang never takes its queue, or one above it, past its capability.

A `Walk` is an object whose cursor is its own fields (the queues' heap, how far each line was
taken, the rest of the lines once nothing fits, a run taken part way); it is taken only as far
as a caller needs (`take(until)`: the turns after a gang's cannot change its turn), and what it
took is kept in its `Turns` (`gangs.turns`). It holds what it reads: the lineup's lines as they
stood when it began (a line the lineup changes for the next walk is a copy, `gangs.lineup`), the
nodes starving gangs drained toward before, and its own room; so a walk read after the lineup
moved on still reads the walk it was. `Order` is a walk as the ledger keeps it, with the state
it was made in (`gangs.walks`). Pure.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from extender.api.engine_settings import Ordering
from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import ROOT
from extender.cache.snapshot import NodeInfo
from extender.gangs.drain import drain
from extender.gangs.fairness import share
from extender.gangs.lineup import Lineup, QueueLine
from extender.gangs.members import GangView
from extender.gangs.placement import Room, members_to_plan, nodes_used, plan_slots
from extender.gangs.queues import QueueView
from extender.gangs.refusals import WANTS_CAPACITY, Cause, Deferred, Rejection
from extender.gangs.turns import Run, Turn, Turns

Rank = tuple[Any, ...]  # a queue's place: (share, -priority, name), per level in a tree


class Walk:
    """One walk of the fair order among the contenders of `lineup` (see the module docstring),
    taken as far as a caller needs (`take`, `step`): the turns after a gang's cannot change its
    turn. What it has taken so far is in `turns`.

    The walk holds what it reads: the lineup's lines as they stood when it began (`Lineup.lines`:
    the lineup copies a line before it changes one a walk holds), its refusals, and the nodes
    starving gangs drained toward before (`targets`; kept while they can still take the gang,
    so draining accumulates). Where it stands is explicit: the queues still in line (a heap by
    rank) and how far each queue's line was taken; past the point where nothing fits, the
    queues left in order and the one whose line is being given (`_Rest`); of a run of refusals
    taken part way, the rest (`pending`). `reserved` is per node what admitted gangs reserve;
    `empty` a room over `nodes` nothing is taken from, if the caller keeps one."""

    def __init__(
        self,
        lineup: Lineup,
        queues: Mapping[str, QueueView],
        nodes: Mapping[str, NodeInfo],
        reserved: Mapping[str, Resources],
        ordering: Ordering,
        *,
        empty: Room | None = None,
        targets: Mapping[str, dict[str, Resources]] | None = None,
    ) -> None:
        self.turns = Turns()
        self._queues = queues
        self._lines = lineup.lines()  # (as they stand: nothing changes them under this walk)
        self._floor = lineup.floor
        self._refused = [Turn(key, rejection=why) for key, why in lineup.refused.items()]
        self._refused_given = 0
        self._targets = dict(targets) if targets else {}
        # Of the gangs handed aims, those that no longer starve: a run that reaches them drops
        # their aims (`aimless`).
        self._aimless = list(self._targets.keys() - lineup.starving)
        self._claims = _Claims(empty if empty is not None else Room(nodes), reserved)
        # What the walk was made from, for telling a walk made afresh would be this one again
        # (`same_inputs`): the lines, the refusals, what was reserved, the aims handed in.
        self._reserved = dict(reserved)
        self._nodes = dict(nodes)  # (the cache's map changes in place: each node as it was)
        self._targets_given = {key: dict(aims) for key, aims in self._targets.items()}
        self._allocated = {name: view.allocated for name, view in queues.items()}
        self._ranks = _QueueRanks(queues, self._allocated, by_share=ordering.by_queue_share)
        # (a queue's rank moves only with an allocation)
        self._rank_of = {name: self._ranks(name) for name in self._lines}
        self._heap = [(rank, name) for name, rank in self._rank_of.items()]
        heapq.heapify(self._heap)
        self._at = dict.fromkeys(self._lines, 0)  # per queue, how far its line was taken
        # Past the point where nothing fits: the queues left, the next last, each with where its
        # line was left; and the queue whose line is being given.
        self._past: list[tuple[str, int]] | None = None
        self._rest: _Rest | None = None
        self._pending: Run | None = None

    def same_inputs(
        self,
        lineup: Lineup,
        nodes: Mapping[str, NodeInfo],
        reserved: Mapping[str, Resources],
        targets: Mapping[str, dict[str, Resources]],
        changed: Iterable[str],
    ) -> bool:
        """Whether a walk made now from these would be this one: the same lines (the very
        objects: the lineup copies a line before it changes one a walk holds) and refusals,
        the same aims handed in, and on every node what admitted gangs leave free exactly as
        it was (`_room_as_was`)."""
        if not lineup.holds(self._lines) or len(lineup.refused) != len(self._refused):
            return False
        if any(lineup.refused.get(turn.key) is not turn.rejection for turn in self._refused):
            return False
        return targets == self._targets_given and self._room_as_was(nodes, reserved, changed)

    def _room_as_was(
        self,
        nodes: Mapping[str, NodeInfo],
        reserved: Mapping[str, Resources],
        changed: Iterable[str],
    ) -> bool:
        """Whether every node offers what it offered when the walk began, less what admitted
        gangs reserve: the nodes `changed` since looked at, and those whose reservation moved
        (a member bound on the node its slot was planned on moves its request from reserved
        to used: nothing changes for the gangs in line)."""
        before = self._claims.reserved  # (what admitted gangs left when the walk began)
        was_reserved, was_nodes = self._reserved, self._nodes
        moved = {
            name
            for name in reserved.keys() | was_reserved.keys()
            if reserved.get(name) != was_reserved.get(name)
        }
        for name in moved.union(changed):
            info, was = nodes.get(name), was_nodes.get(name)
            if info is None or was is None:
                if info is not was:
                    return False
                continue
            if (info.allocatable, info.labels, info.taints) != (
                was.allocatable,
                was.labels,
                was.taints,
            ):
                return False
            free = None if info.unschedulable else info.free - reserved.get(name, EMPTY)
            if free != before.free.get(name):
                return False
        return True

    @property
    def pending(self) -> Run | None:
        """Of a run the walk gave, the part not taken yet (the gang asked about was in it)."""
        return self._pending

    def take(self, until: str | None = None) -> list[Turn | Run]:
        """Take the walk as far as gang `until`'s turn (None: to the end); what it took now, in
        order (a run of refusals ends at `until` when it is in it)."""
        taken: list[Turn | Run] = []
        if until is not None and until in self.turns:
            return taken
        while (item := self._step(until)) is not None:
            taken.append(item)
            if until is not None and (item.last if isinstance(item, Run) else item.key) == until:
                break
        return taken

    def step(self) -> Turn | Run | None:
        """Take one more step of the walk: a turn, or a run of refusals (the rest of one taken
        part way first); None when the walk is over."""
        return self._step(None)

    def aimless(self, run: Run) -> list[str]:
        """The gangs in `run` this walk was handed aims for that no longer starve."""
        return [key for key in self._aimless if run.position(key) is not None]

    def _step(self, until: str | None) -> Turn | Run | None:
        run = self._pending
        if run is None:
            item = self._next()
            if not isinstance(item, Run):
                if item is not None:
                    self.turns.add(item)
                return item
            run = item
        at = run.position(until) if until is not None else None
        self._pending = None
        if at is not None and at + 1 < run.end:
            run, self._pending = run.split(at + 1)
        self.turns.add_run(run)
        return run

    def _next(self) -> Turn | Run | None:
        """The walk's next turn or run, not taken yet."""
        if self._refused_given < len(self._refused):
            self._refused_given += 1
            return self._refused[self._refused_given - 1]
        if self._past is None:
            if not self._heap:
                return None
            if self._floor is None or self._claims.room.most_free_cpu >= self._floor:
                return self._taken(self._ranks.first(self._heap))
            # Nothing in line fits any more (`_Rest`): the queues' ranks no longer move.
            self._past = [(name, self._at[name]) for name in self._ranks.in_order(self._heap)]
            self._past.reverse()
        while True:
            if self._rest is not None:
                item = self._rest.next()
                if item is not None:
                    return item
                self._rest = None
            if not self._past:
                return None
            name, start = self._past.pop()
            self._rest = _Rest(
                self._lines[name],
                start,
                view=self._queues[name],
                claims=self._claims,
                allocated=self._allocated,
                targets=self._targets,
            )

    def _taken(self, name: str) -> Turn:
        """The next turn of queue `name`: the first of its line, planned on what is left."""
        line = self._lines[name]
        _, key = line.ranked[self._at[name]]
        self._at[name] += 1
        _, contender, starving = line.entries[key]
        gang, claims = contender.gang, self._claims
        turn = claims.turn(gang, self._queues[name], self._allocated)
        if turn.slots:
            per_node: dict[str, Resources] = {}  # (a node's room moves once per gang)
            for slot in turn.slots.values():
                per_node[slot.node] = per_node.get(slot.node, EMPTY) + slot.request
            for node, amount in per_node.items():
                claims.take(gang.key, node, amount)
            self._ranks.took(name, sum(per_node.values(), EMPTY))
            self._rank_of[name] = self._ranks(name)
        elif starving and _lacks_capacity(turn):
            aimed, taken = drain(gang, claims.room, self._targets.get(gang.key))
            for node, amount in taken.items():
                claims.take(gang.key, node, amount)
            turn = Turn(gang.key, rejection=turn.rejection, targets=aimed)
        if self._at[name] < len(line.ranked):
            heapq.heappush(self._heap, (self._rank_of[name], name))
        return turn


class _QueueRanks:
    """Where a queue stands in the walk, by what the queues are allocated at this point of it:
    (share, -priority, name); in a tree, that of each queue from the top level down to it."""

    def __init__(
        self,
        queues: Mapping[str, QueueView],
        allocated: dict[str, Resources],
        *,
        by_share: bool,
    ) -> None:
        self.queues, self.allocated, self.by_share = queues, allocated, by_share
        self.tiered = any(  # (a `root` Queue over flat queues changes no rank: not tiered)
            view.parent is not None and view.parent.name != ROOT for view in queues.values()
        )

    def __call__(self, name: str) -> Rank:
        view = self.queues[name]
        if self.tiered:  # level by level from the top: the branch least far into its share first
            return tuple(self._one(above) for above in reversed(list(view.lineage())))
        return self._one(view)

    def took(self, name: str, amount: Resources) -> None:
        """Queue `name` took `amount`: so did each queue above it."""
        for view in self.queues[name].lineage():
            self.allocated[view.name] = self.allocated[view.name] + amount

    def first(self, heap: list[tuple[Rank, str]]) -> str:
        """The queue whose turn comes, taken off `heap`. In a tree, a queue that shares an
        ancestor with one that took capacity may rank lower than when it was put on the heap
        (ranks only grow in a walk): it is put back where it stands now."""
        while True:
            rank, name = heapq.heappop(heap)
            if not self.tiered or (now := self(name)) == rank:
                return name
            heapq.heappush(heap, (now, name))

    def in_order(self, heap: list[tuple[Rank, str]]) -> list[str]:
        """The queues on `heap`, in the order their turns would come now."""
        if self.tiered:
            return [name for _, name in sorted((self(name), name) for _, name in heap)]
        return [name for _, name in sorted(heap)]

    def _one(self, view: QueueView) -> tuple[float, int, str]:
        fill = share(self.allocated[view.name], view.deserved) if self.by_share else 0.0
        return (fill, -view.queue.spec.priority, view.name)


class _Rest:
    """The rest of one queue's line once no node has the cpu for the largest member of any gang
    in line (`GangView.largest_cpu`): each turn is a refusal and changes nothing. A starving
    gang takes nothing (nobody in line could take what is free) and keeps the nodes it drained
    toward (the first time, aims where a drain would). The queues' ranks no longer move, so the
    line goes whole, from `start` (where the walk left it); a refusal is worked out when read,
    except a starving gang's when a rule may have refused it (then it aims nowhere: a queue's
    capability, too few pods). Turns that change nothing the ledger keeps (not starving, or
    starving and aiming where it aimed before) come as `Run`s, stretches of the line found by
    position (only the starving gangs, kept apart, are looked at one by one), whose turns it
    makes when read (`refusal`). Its cursor: the next starving gang with a turn of its own, and
    where in the line the next run starts."""

    def __init__(
        self,
        line: QueueLine,
        start: int,
        *,
        view: QueueView,
        claims: _Claims,
        allocated: Mapping[str, Resources],
        targets: Mapping[str, dict[str, Resources]],
    ) -> None:
        self._line, self._view, self._claims, self._targets = line, view, claims, targets
        self._allocated = _allocated_above(view, allocated)  # (the walk takes nothing more: final)
        self._capped = view.capped
        # The starving gangs past where the walk left the line that take a turn of their own
        # (the others stay in the runs: they aim where they did).
        hungry = line.starving
        own = hungry[bisect_left(hungry, line.ranked[start]) :]
        if not self._capped:
            own = [rk for rk in own if rk[1] in line.ruled or not targets.get(rk[1])]
        self._own, self._next_own, self._at = own, 0, start

    def next(self) -> Turn | Run | None:
        """The line's next run, or turn of a starving gang; None at its end."""
        line = self._line
        if self._next_own < len(self._own):
            rank_key = self._own[self._next_own]
            position = bisect_left(line.ranked, rank_key, self._at)
            if position > self._at:
                run = Run(line, self._at, position, self)
                self._at = position
                return run
            self._next_own += 1
            self._at = position + 1
            key = rank_key[1]
            return _aiming(
                self._claims,
                line.entries[key][1].gang,
                self._view,
                self._allocated,
                ruled=self._capped or key in line.ruled,  # (a rule may refuse it)
                kept=self._targets.get(key),
            )
        if self._at < len(line.ranked):
            run = Run(line, self._at, len(line.ranked), self)
            self._at = len(line.ranked)
            return run
        return None

    def refusal(self, key: str) -> Turn:
        """The turn of gang `key`, in one of the line's runs: refused, worked out when read; a
        starving one aims where it aimed before."""
        _, contender, starving = self._line.entries[key]
        why = _later(self._claims, contender.gang, self._view, self._allocated)
        aimed = dict(self._targets.get(key) or {}) if starving else {}
        return Turn(key, rejection=why, targets=aimed)


def _aiming(
    claims: _Claims,
    gang: GangView,
    view: QueueView,
    allocated: Mapping[str, Resources],
    *,
    ruled: bool,
    kept: dict[str, Resources] | None,
) -> Turn:
    """A starving gang's turn past the point where nothing fits: refused, aiming where it aimed
    before or (the first time) where a drain would; nowhere when a rule refused it."""
    rejection: Rejection | None = _later(claims, gang, view, allocated)
    if ruled:
        turn = claims.turn(gang, view, allocated)
        if not _lacks_capacity(turn):
            return turn
        rejection = turn.rejection
    aimed = dict(kept) if kept else drain(gang, claims.room, None)[0]
    return Turn(gang.key, rejection=rejection, targets=aimed)


def _allocated_above(view: QueueView, allocated: Mapping[str, Resources]) -> dict[str, Resources]:
    """What the queue and those above it are allocated now (kept for a refusal worked out
    later)."""
    return {above.name: allocated[above.name] for above in view.lineage()}


def _later(
    claims: _Claims, gang: GangView, view: QueueView, allocated: Mapping[str, Resources]
) -> Deferred:
    """A refusal past the point where nothing fits (the room is final), worked out when read."""

    def refusal() -> Rejection:
        rejection = claims.turn(gang, view, allocated).rejection
        assert rejection is not None  # (nothing in line fits)
        return rejection

    return Deferred(refusal)


def _lacks_capacity(turn: Turn) -> bool:
    """Refused for want of capacity (what draining can help), not for a rule."""
    if isinstance(turn.rejection, _ShortOfRoom):  # (either of its causes: nothing to work out)
        return True
    cause = turn.rejection.cause if turn.rejection is not None else ""
    return cause in WANTS_CAPACITY or cause == Cause.QUEUED


class _ShortOfRoom(Deferred):
    """A refusal for want of room with gangs ahead: Queued or NotEnoughResources, which of the
    two worked out when read (`_Claims._short`); for want of capacity either way."""


class _Claims:
    """What the walk has handed out so far, on top of what admitted gangs reserve."""

    def __init__(self, empty: Room, reserved: Mapping[str, Resources]) -> None:
        # node -> (when in the walk, gang) of the gangs that took capacity on it
        self.claimants: dict[str, list[tuple[int, str]]] = {}
        self.taken: list[tuple[str, Resources]] = []  # (node, amount), in the walk's order
        self.reserved = empty.copy()  # what admitted gangs leave; the same the whole walk
        for node, amount in reserved.items():
            self.reserved.take(node, amount)
        self.room = self.reserved.copy()

    def take(self, key: str, node: str, amount: Resources) -> None:
        self.claimants.setdefault(node, []).append((len(self.taken), key))
        self.taken.append((node, amount))
        self.room.take(node, amount)

    def turn(self, gang: GangView, view: QueueView, allocated: Mapping[str, Resources]) -> Turn:
        """The gang's turn on what is left: its slots, or why it waits; `allocated` is per queue
        what it is allocated at this point of the walk."""
        if view.capped:  # (no capability: nothing to refuse, no sum to make)
            members, _ = members_to_plan(gang)
            wanted = sum((pod.request for pod in members), EMPTY)
            refusal = view.capability_refusal(gang.key, wanted, allocated)
            if refusal is not None:
                return Turn(gang.key, rejection=refusal)
        slots, rejection = plan_slots(gang, self.room, with_reasons=not self.taken)
        if rejection is None:
            return Turn(gang.key, slots=slots)
        if rejection.cause != Cause.NOT_ENOUGH_RESOURCES or not self.taken:
            return Turn(gang.key, rejection=rejection)
        # Short of room with gangs ahead: whether they took what it needs (Queued) or it lacks
        # room even were nobody ahead is worked out when read (most turns never are), as it
        # stood at this point of the walk.
        at = len(self.taken)
        return Turn(gang.key, rejection=_ShortOfRoom(lambda: self._short(gang, at)))

    def _short(self, gang: GangView, at: int) -> Rejection:
        """Why a gang the room left after the first `at` claims had no room for waits, its cause
        known at once and its words worked out when read: the gangs ahead took what it needs
        (Queued), or it does not fit even on what admitted gangs leave (what it lacks)."""
        alone = nodes_used(gang, self.reserved)  # (a plan takes nothing off the room)
        if not alone:
            return Deferred(lambda: self._lacking(gang, at), Cause.NOT_ENOUGH_RESOURCES)
        return Deferred(lambda: self._queued(gang, alone, at), Cause.QUEUED)

    def _lacking(self, gang: GangView, at: int) -> Rejection:
        """Why the gang does not fit in the room the first `at` claims left, in words (a plan
        that explains; on that room made again when the walk has taken more since)."""
        room = self.room
        if at < len(self.taken):
            room = self.reserved.copy()
            for node, amount in self.taken[:at]:
                room.take(node, amount)
        _, rejection = plan_slots(gang, room)
        assert rejection is not None  # (it did not fit on this room)
        return rejection

    def _queued(self, gang: GangView, alone: Iterable[str], at: int) -> Rejection:
        """Why the gang waits: for the gangs that, among the first `at` claims of the walk, took
        capacity on the nodes it would use alone (or anywhere, if none did there)."""

        def before(nodes: Iterable[str]) -> set[str]:
            claims = self.claimants
            return {k for node in nodes for when, k in claims.get(node, ()) if when < at}

        ahead = sorted(before(alone) or before(self.claimants))
        named = ", ".join(ahead[:3]) + (f" and {len(ahead) - 3} more" if len(ahead) > 3 else "")
        return Rejection(
            Cause.QUEUED,
            f"gang {gang.key}: the capacity it needs goes first to gangs ahead of it in the "
            f"fair order (queue share, priority, age): {named}",
        )


@dataclass(frozen=True)
class Order:
    """One walk of the fair order as the ledger keeps it (`gangs.walks`): the walk, taken as far
    as asked (`turns` holds the turns reached so far), and the state it was made in."""

    number: int
    made_at: tuple[int, ...]
    valid_until: float  # the clock's time a gang starts starving or a backoff ends
    queues: dict[str, QueueView]
    contenders: AbstractSet[str]  # keys, as the walk lined them up
    walk: Walk

    @property
    def turns(self) -> Turns:
        return self.walk.turns
