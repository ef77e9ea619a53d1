"""The fair order's walks the ledger takes one after another, and what goes from one to the next.

The ledger (`gangs.ledger.Gangs`) keeps the records: the gangs it admitted, refused or backed
off. The fair order (`gangs.order`) is walked afresh from them only when the cluster, the ledger
or the clock moved it, and each walk only as far as someone asked. `Walks`, which the ledger owns
and drives, keeps what that takes:

- the current walk (`Order`), as far as it was taken, while the state it was made in stands (the
  ledger's state key, `made_at`) and the clock has not moved it (`valid_until`: a gang starts
  starving, a backoff ends); the ledger drops it when it changes what the walk was made from
  (`drop`), or keeps it on when what it changed the walk had already counted (`keep`: a gang it
  let in admitted);
- the contenders and their lineup (`gangs.contending`), brought up to date from the ledger's
  records (`Records`, its reading methods) before each new walk;
- a room over the nodes nothing is taken from, moved along with them (`KeptRoom`);
- what the walks said of the gangs they reached, for the walks after them and for the ledger:
  the nodes a starving gang drains toward (the next walk aims there again, so draining
  accumulates), and since when a gang a walk let in has not come for its capacity (the ledger
  backs it off after `reservation_timeout`, `unclaimed`, so it cannot block the gangs behind it).

Taking a walk (`take`, `lazily`) notes those for each turn taken. What it keeps of a gang goes
when the gang stops contending or the ledger forgets it (`forget`). Pure: the clock's time is
handed in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace

from extender.api.engine_settings import Ordering
from extender.api.resources import Resources
from extender.cache.snapshot import NodeInfo, Snapshot
from extender.cache.state import ClusterState
from extender.gangs.contending import Contending, Records
from extender.gangs.lineup import Ranking
from extender.gangs.members import GangView
from extender.gangs.order import Order, Walk
from extender.gangs.placement import KeptRoom
from extender.gangs.queues import QueueView
from extender.gangs.turns import Run, Turn


class Walks:
    def __init__(self) -> None:
        self._contending = Contending()  # walk to walk
        self._room = KeptRoom()  # the nodes' free capacity, walk to walk
        self._order: Order | None = None
        self._generation = 0  # the nodes' generation the current walk was made or kept at
        self._numbers = itertools.count()
        self._targets: dict[str, dict[str, Resources]] = {}  # starving gangs: where they drain
        self._let_in_since: dict[str, float] = {}  # fit, not come for it yet

    # -- the current walk ----------------------------------------------------------------------

    def current(self, made_at: tuple[int, ...], now: float) -> Order | None:
        """The current walk, if it was made in state `made_at` and is still valid at `now`."""
        order = self._order
        if order is None or order.made_at != made_at:
            return None
        return order if now < order.valid_until else None

    def knows(self, key: str) -> bool:
        """Whether the current walk lined gang `key` up."""
        return self._order is not None and key in self._order.contenders

    def drop(self) -> None:
        """What the current walk was made from changed: the next one is made afresh."""
        self._order = None

    def keep(self, order: Order, made_at: tuple[int, ...]) -> None:
        """`order` stands in state `made_at`: the ledger admitted gangs the walk let in, whose
        slots it had counted as claimed, so every other turn stands as it was."""
        self._order = replace(order, made_at=made_at)

    def line_up(
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
    ) -> list[str]:
        """Bring the contenders up to `ranking.now` for a new walk (`Contending.sync`); the keys
        of the gangs refused before of which nothing waits any more, for the ledger to forget.
        What is kept of gangs that no longer contend goes; of the others, it is kept until a
        walk reaches them."""
        gone, finished = self._contending.sync(
            state,
            queues,
            ranking,
            asking=asking,
            records=records,
            backoff=backoff,
            schedulers=schedulers,
            timeout=timeout,
        )
        for key in gone:
            self._targets.pop(key, None)
            self._let_in_since.pop(key, None)
        return finished

    def walk(
        self,
        view: Snapshot,
        nodes: Mapping[str, NodeInfo],
        queues: dict[str, QueueView],
        reserved: Mapping[str, Resources],
        ordering: Ordering,
        *,
        made_at: tuple[int, ...],
        now: float,
        backoffs: Iterable[float],
    ) -> Order:
        """A new walk of the lined-up contenders, the current one from now on: valid until a
        contender's standing moves with the clock or one of `backoffs` ends. The current walk
        instead, moved to `made_at`, when a walk made now would be the same (`_same`)."""
        contending = self._contending
        valid_until = min([*backoffs, contending.next_moment(now)])
        previous = self._order
        if (
            previous is not None
            and previous.valid_until == valid_until
            and now < valid_until
            and self._same(previous, view, nodes, queues, reserved=reserved, made_at=made_at)
        ):
            self._order = replace(previous, made_at=made_at)
            self._generation = view.generation
            return self._order
        walk = Walk(
            contending.lineup,
            queues,
            nodes,
            reserved,
            ordering,
            empty=self._room.of(view),
            targets=self._targets,
        )
        order = Order(
            next(self._numbers), made_at, valid_until, queues, contending.contenders.keys(), walk
        )
        self._order, self._generation = order, view.generation
        return order

    def _same(
        self,
        previous: Order,
        view: Snapshot,
        nodes: Mapping[str, NodeInfo],
        queues: Mapping[str, QueueView],
        *,
        reserved: Mapping[str, Resources],
        made_at: tuple[int, ...],
    ) -> bool:
        """Whether a walk made now would be `previous` again: what the fair order reads of the
        queues, PriorityClasses and topology has not moved (the state's stamp), nor the queues'
        figures, and the walk's own inputs are as they were (`Walk.same_inputs`). Most walks a
        cluster event makes are of that kind: a member of an admitted gang bound where its slot
        was planned changes the state and the ledger, and nothing the gangs in line are given."""
        if previous.made_at[2:4] != made_at[2:4] or _read(previous.queues) != _read(queues):
            return False
        changed = view.changed_since(self._generation)
        if changed is None:
            return False
        return previous.walk.same_inputs(
            self._contending.lineup, nodes, reserved, self._targets, changed
        )

    # -- taking it -----------------------------------------------------------------------------

    def take(self, order: Order, now: float, until: str | None = None) -> None:
        """Take the walk up to gang `until`'s turn (None: all of them), noting what it says of
        each gang it reaches (at `now`): where a starving gang drains, which gangs it lets in."""
        walk = order.walk
        for taken in walk.take(until):
            self._note(walk, taken, now)

    def lazily(self, order: Order, now: float) -> Iterator[tuple[str, Turn]]:
        """The turns the walk gives one by one, in its order, taken as they are read (a reader
        that stops early leaves the rest untaken); they end at the first run of refusals,
        past which nothing fits and nobody is let in."""
        walk = order.walk
        yield from list(walk.turns.given())
        if walk.turns.ran:
            return
        while (taken := walk.step()) is not None:
            self._note(walk, taken, now)
            if isinstance(taken, Run):
                return
            yield taken.key, taken

    def _note(self, walk: Walk, taken: Turn | Run, now: float) -> None:
        """Keep what a turn `walk` took says of its gang for the walks after it; a run of
        refusals past the point where nothing fits drops what was kept of its gangs, except a
        starving gang's aims."""
        if isinstance(taken, Run):
            # (few of either: a gang that starves goes on starving, few are let in at once)
            for key in walk.aimless(taken):
                self._targets.pop(key, None)
            for key in [k for k in self._let_in_since if taken.position(k) is not None]:
                del self._let_in_since[key]
            return
        key = taken.key
        if taken.targets:
            self._targets[key] = taken.targets
        else:
            self._targets.pop(key, None)
        if taken.slots and key not in self._contending.pending_since:
            self._let_in_since.setdefault(key, now)
        else:
            self._let_in_since.pop(key, None)

    # -- what is kept of a gang ----------------------------------------------------------------

    def touch(self, key: str) -> None:
        """The ledger changed what it knows of gang `key`: it is looked at again at the next
        walk."""
        self._contending.touch(key)

    def forget(self, key: str) -> None:
        """Drop what the walks kept of gang `key` (admitted now, or gone)."""
        self._contending.touch(key)
        self._targets.pop(key, None)
        self._let_in_since.pop(key, None)

    def first_seen(self, key: str) -> float | None:
        """Since when gang `key` waits, if it contends without being asked about yet."""
        return self._contending.pending_since.get(key)

    def unasked(self, refused: AbstractSet[str], admitted: AbstractSet[str]) -> dict[str, float]:
        """The gangs the last walk lined up that were never asked about, neither `refused` nor
        `admitted`; since when each was first seen."""
        contending = self._contending
        return {
            key: since
            for key, since in contending.pending_since.items()
            if key in contending.contenders and key not in refused and key not in admitted
        }

    def unclaimed(self, deadline: float) -> list[str]:
        """The gangs a walk let in before `deadline` that have not come for their capacity."""
        return [key for key, since in self._let_in_since.items() if since < deadline]

    def stop_awaiting(self, key: str) -> None:
        """Gang `key` is no longer awaited to come for what a walk let it in to."""
        self._let_in_since.pop(key, None)


def _read(queues: Mapping[str, QueueView]) -> dict[str, tuple[object, ...]]:
    """Of each queue's figures, those a walk reads (a member bound where its slot was planned
    moves its queue's `placed`, not its `allocated`)."""
    return {
        name: (
            view.queue,
            view.allocated,
            view.deserved,
            view.path,
            view.leaf,
            view.parent.name if view.parent is not None else None,
        )
        for name, view in queues.items()
    }
