"""The admission order: which waiting gangs a batch scheduler would admit now, and in what order.

The stock kube-scheduler picks which pod to ask about; Lahar decides whether its gang may go. Once
per cluster change, `walk` takes turns among every gang that waits (plus the one being asked
about), as Volcano's allocate action does:

1. queues by their share of what they deserve, lowest first, re-ranked after every admission
   (so two saturated queues weighted 1:3 end up holding 1:3); in a queue tree, level by level
   from the top: the top-level branch least far into its share, then within it the child least
   far into its own, down to a leaf queue (Volcano's hierarchical order);
2. within a queue, jobs in their rank (`gangs.lineup`: starving first, then PriorityClass,
   then DRF dominant share, then age).

Each gang in turn is planned on the capacity that admitted gangs and the gangs before it leave
(`Turn.slots`). One that does not fit claims nothing, so capacity is never left idle while a
more deserving gang cannot use it (backfill), except for a *starving* gang refused for want of
capacity: it holds the free capacity of the nodes it is draining toward (`Turn.targets`), so
small gangs stop taking what it needs, until it fits (`gangs.drain`). A gang the walk
passed over because others came first says who.

Once no node has the cpu for the largest member of any gang in line (in a full cluster, most of
a long line), the rest of the walk changes nothing: every turn is a refusal, a starving gang
holds nothing (nobody in line could take what is free) and aims where it did before (the first
time, where a drain would), and the others' refusals are worked out when read (`_full`): the
walk hands them over as stretches of the lines, without looking at them one by one.
Queue rules refuse before any plan: a Closed queue admits nothing new, a missing queue nothing
(`gangs.lineup`), and a gang never takes its queue, or one above it, past its capability. Pure.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from extender.api.engine_settings import Ordering
from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import ROOT
from extender.cache.snapshot import NodeInfo
from extender.gangs.drain import drain
from extender.gangs.fairness import share
from extender.gangs.lineup import Entry, Lineup
from extender.gangs.members import GangView
from extender.gangs.placement import Room, members_to_plan, nodes_used, plan_slots
from extender.gangs.queues import QueueView
from extender.gangs.refusals import WANTS_CAPACITY, Cause, Deferred, Rejection
from extender.gangs.turns import Run, Turn, Turns

Rank = tuple[Any, ...]  # a queue's place: (share, -priority, name), per level in a tree


def walk(
    lineup: Lineup,
    queues: Mapping[str, QueueView],
    nodes: Mapping[str, NodeInfo],
    reserved: Mapping[str, Resources],
    ordering: Ordering,
    *,
    empty: Room | None = None,
    targets: Mapping[str, dict[str, Resources]] | None = None,
) -> tuple[Iterator[Turn | Run], Turns]:
    """Every contender's turn, in the order decided (see the module docstring), as the walk
    reaches it: a caller that needs one gang's turn stops there (the turns after it cannot
    change it) and keeps what it took in the `Turns` returned (`add`, `add_run`). The turns are
    planned as they are taken, from `lineup`'s lines, which must not change meanwhile. Past the
    point where nothing in line fits (`_full`), refusals that change nothing (not starving, or
    starving and aiming where it aimed before) come as `Run`s, stretches of a line whose turns
    `Turns` makes when read (most never are). `reserved` is per node what admitted gangs hold;
    `targets` the nodes starving gangs drained toward before (kept while they can still take
    the gang, so draining accumulates), read as the walk reaches each gang: the caller may
    change a gang's once its turn is taken; `empty` a room over `nodes` that holds nothing, if
    the caller keeps one."""
    refused = [Turn(key, rejection=rejection) for key, rejection in lineup.refused.items()]
    claims = _Claims(empty if empty is not None else Room(nodes), reserved)
    allocated = {name: view.allocated for name, view in queues.items()}
    lines, entries, floor, changes = lineup.lines, lineup.entries, lineup.floor, lineup.changes
    at = dict.fromkeys(lines, 0)  # per queue, how far its line was taken

    queue_rank = _QueueRanks(queues, allocated, by_share=ordering.by_queue_share)

    queue_ranks = {name: queue_rank(name) for name in lines}  # move only with an allocation
    heap = [(rank, name) for name, rank in queue_ranks.items()]
    heapq.heapify(heap)
    drained = targets or {}

    def unchanged() -> Mapping[str, Entry]:
        if lineup.changes != changes:
            raise RuntimeError("the lineup changed under a walk that was still taken")
        return entries

    def refusal(key: str) -> Turn:
        """The turn of a gang past the point where nothing fits: refused, worked out when read;
        a starving one aims where it aimed before."""
        _, contender, starving = unchanged()[key]
        queue = contender.gang.queue
        why = _later(claims, contender.gang, queues[queue], _held(queues[queue], allocated))
        aimed = dict(drained.get(key) or {}) if starving else {}
        return Turn(key, rejection=why, targets=aimed)

    def turns() -> Iterator[Turn | Run]:
        yield from refused
        while heap:
            unchanged()
            if floor is not None and claims.room.most_free_cpu < floor:
                yield from _full(
                    [(name, at[name]) for name in queue_rank.in_order(heap)],
                    lineup,
                    unchanged,
                    queues=queues,
                    allocated=allocated,
                    claims=claims,
                    drained=drained,
                )
                return
            yield taken(queue_rank.first(heap))

    def taken(name: str) -> Turn:
        """The next turn of queue `name`: the first of its line, planned on what is left."""
        _, key = lines[name][at[name]]
        at[name] += 1
        _, contender, starving = entries[key]
        gang = contender.gang
        turn = claims.turn(gang, queues[name], allocated)
        if turn.slots:
            per_node: dict[str, Resources] = {}  # (a node's room moves once per gang)
            for slot in turn.slots.values():
                per_node[slot.node] = per_node.get(slot.node, EMPTY) + slot.request
            for node, amount in per_node.items():
                claims.take(gang.key, node, amount)
            queue_rank.took(name, sum(per_node.values(), EMPTY))
            queue_ranks[name] = queue_rank(name)
        elif starving and _lacks_capacity(turn):
            aimed, held = drain(gang, claims.room, drained.get(gang.key))
            for node, amount in held.items():
                claims.take(gang.key, node, amount)
            turn = Turn(gang.key, rejection=turn.rejection, targets=aimed)
        if at[name] < len(lines[name]):
            heapq.heappush(heap, (queue_ranks[name], name))
        return turn

    return turns(), Turns(refusal, unchanged)


class _QueueRanks:
    """Where a queue stands in the walk, by what the queues hold at this point of it: (share,
    -priority, name); in a tree, that of each queue from the top level down to it."""

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


def _full(
    rest: Sequence[tuple[str, int]],
    lineup: Lineup,
    unchanged: Callable[[], Mapping[str, Entry]],
    *,
    queues: Mapping[str, QueueView],
    allocated: Mapping[str, Resources],
    claims: _Claims,
    drained: Mapping[str, dict[str, Resources]],
) -> Iterator[Turn | Run]:
    """The turns left once no node has the cpu for the largest member of any gang in line
    (`GangView.largest_cpu`): each is a refusal and changes nothing. A starving gang holds
    nothing (nobody in line could take what is free) and keeps the nodes it drained toward (the
    first time, aims where a drain would). The queues' ranks no longer move, so each queue's
    line goes whole (`rest`: the queues in order, each with where the walk left its line, whose
    entries `unchanged` gives while the lineup has not changed); a refusal is worked out when
    read, except a starving gang's when a rule may have refused it (then it aims nowhere: a
    queue's capability, too few pods). Turns that change nothing the ledger keeps (not
    starving, or starving and aiming where it aimed before) come as `Run`s, stretches of a line
    found by position (only the starving gangs, kept apart, are looked at one by one), their
    turns made when read."""
    for name, start in rest:
        view = queues[name]
        held, capped = _held(view, allocated), view.capped
        line, hungry = lineup.lines[name], lineup.starving_lines.get(name, [])
        entries = unchanged()
        # The starving gangs past where the walk left the line that take a turn of their own
        # (the others stay in the run: they aim where they did).
        own = hungry[bisect_left(hungry, line[start]) :]
        if not capped:
            own = [rk for rk in own if rk[1] in lineup.ruled or not drained.get(rk[1])]
        at = start
        for rank_key in own:
            key = rank_key[1]
            gang = entries[key][1].gang
            ruled = capped or key in lineup.ruled  # (a rule may refuse it)
            position = bisect_left(line, rank_key, at)
            if position > at:
                yield Run(name, line, at, position)
            yield _aiming(claims, gang, view, held, ruled=ruled, kept=drained.get(key))
            entries = unchanged()
            at = position + 1
        if at < len(line):
            yield Run(name, line, at, len(line))


def _aiming(
    claims: _Claims,
    gang: GangView,
    view: QueueView,
    held: Mapping[str, Resources],
    *,
    ruled: bool,
    kept: dict[str, Resources] | None,
) -> Turn:
    """A starving gang's turn past the point where nothing fits: refused, aiming where it aimed
    before or (the first time) where a drain would; nowhere when a rule refused it."""
    rejection: Rejection | None = _later(claims, gang, view, held)
    if ruled:
        turn = claims.turn(gang, view, held)
        if not _lacks_capacity(turn):
            return turn
        rejection = turn.rejection
    aimed = dict(kept) if kept else drain(gang, claims.room, None)[0]
    return Turn(gang.key, rejection=rejection, targets=aimed)


def _held(view: QueueView, allocated: Mapping[str, Resources]) -> dict[str, Resources]:
    """What the queue and those above it hold now (kept for a refusal worked out later)."""
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
            self.reserved.hold(node, amount)
        self.room = self.reserved.copy()

    def take(self, key: str, node: str, amount: Resources) -> None:
        self.claimants.setdefault(node, []).append((len(self.taken), key))
        self.taken.append((node, amount))
        self.room.hold(node, amount)

    def turn(self, gang: GangView, view: QueueView, allocated: Mapping[str, Resources]) -> Turn:
        """The gang's turn on what is left: its slots, or why it waits; `allocated` is per queue
        what it holds at this point of the walk."""
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
        alone = nodes_used(gang, self.reserved)  # (a plan changes nothing held)
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
                room.hold(node, amount)
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
    """One walk of the fair order and the state it was made in. The walk is taken as far as
    asked: `turns` holds the turns reached so far, `rest` yields the others."""

    number: int
    made_at: tuple[int, ...]
    valid_until: float  # the clock's time a gang starts starving or a backoff ends
    turns: Turns
    queues: dict[str, QueueView]
    contenders: AbstractSet[str]  # keys, as the walk lined them up
    rest: Iterator[Turn | Run]  # (runs: refusals whose turns `turns` makes when read)
