"""Lahar's own preemption and reclaim: for the most deserving gang that cannot fit, whom to evict.

kube-scheduler's preemption cannot help a gang: its dry run uses only in-tree filters (resource fit
is Lahar's) and knows nothing of gangs or queues. So Lahar decides itself, like Volcano's preempt
and reclaim actions: for the gangs the fair order refused for want of capacity (`wanting`, most
deserving first), `victims_for` picks the fewest whole victim gangs (or spare members) that let
the whole gang fit (`preemption.victims`; in a queue tree, from the closest kin first), from a
`Pool` gathered once per pass. Capacity that
terminating pods are about to free counts as free, so victims already evicted are not replaced
by more. The server evicts them and reports. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from extender.api.resources import EMPTY, Resources
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.gangs.members import GangView, MemoSlot, Shape, gang_priority, view_gang
from extender.gangs.order import Order
from extender.gangs.placement import members_to_plan
from extender.gangs.queues import QueueView
from extender.gangs.refusals import WANTS_CAPACITY
from extender.preemption.victims import (
    Rooms,
    Rules,
    Unit,
    by_kinship,
    choose,
    eligible,
    units_of,
)


@dataclass(frozen=True)
class Preemption:
    preemptor: GangView
    victims: list[Unit]

    @property
    def message(self) -> str:
        names = ", ".join(
            unit.key if unit.whole else f"{unit.pods[0][0].key} of {unit.key}"
            for unit in self.victims
        )
        pods = sum(len(unit.pods) for unit in self.victims)
        return f"evicting {pods} pods ({names}) so that gang {self.preemptor.key} fits whole"


@dataclass(frozen=True)
class Pool:
    """What a preemption pass may take, gathered once per pass: every running gang's victim
    units (gangs with a member already terminating are being evicted: not again; gangs whose
    bindings are still being made are not running yet), and per node what terminating pods are
    about to free."""

    units: list[Unit]
    freeing: dict[str, Resources]
    _rooms: dict[tuple[int, int], Rooms] = field(default_factory=dict, compare=False, repr=False)
    # The units a gang with none of its own in the pool may take, per queue, priority and rules,
    # with the queue figures they were chosen by.
    _eligible: dict[tuple[str, int, Rules], tuple[Mapping[str, QueueView], list[Unit]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    # Searches that found no victims, by what they depend on besides the rooms (forgotten
    # when the rooms are built anew: `alike`), with the queue figures they searched.
    _fruitless: dict[tuple[object, ...], Mapping[str, QueueView]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def of(cls, state: ClusterState, gangs: Gangs) -> Pool:
        units: list[Unit] = []
        freeing: dict[str, Resources] = {}
        for uid in state.terminating:
            node = state.placed_on(uid)
            if node is not None:
                freeing[node] = freeing.get(node, EMPTY) + state.pods[uid].request
        for key in state.pod_groups:
            if gangs.admission(key) is None:
                units += _units(state, view_gang(state, key))
        return cls(units, freeing)

    def eligible(
        self, key: str, queue: str, priority: int, queues: Mapping[str, QueueView], rules: Rules
    ) -> list[Unit]:
        """The units gang `key` of `queue` and `priority` may take (`victims.eligible`), its own
        left out; listed once per queue and priority for the gangs that have none here (most
        gangs wanting capacity have nothing running)."""
        if key in self._owners:
            others = [unit for unit in self.units if unit.key != key]
            return eligible(others, queue, priority, queues, rules)
        others = self.units
        kept = self._eligible.get((queue, priority, rules))
        if kept is not None and kept[0] is queues:
            return kept[1]
        allowed = eligible(others, queue, priority, queues, rules)
        self._eligible[(queue, priority, rules)] = (queues, allowed)
        return allowed

    def alike(
        self,
        key: str,
        shape: Shape | None,
        *,
        queue: str,
        priority: int,
        rules: Rules,
    ) -> tuple[object, ...] | None:
        """What a victim search for gang `key` depends on besides the rooms and queue figures,
        when another gang's search says what it finds: its members' shape (None: they do not
        run anywhere), queue, priority and the rules, with no units of its own in the pool."""
        if shape is None or key in self._owners:
            return None
        return (shape, queue, priority, rules)

    def fruitless(self, alike: tuple[object, ...] | None, queues: Mapping[str, QueueView]) -> bool:
        """Whether a search alike found no victims on these rooms and queue figures."""
        return alike is not None and self._fruitless.get(alike) is queues

    def found_nothing(
        self, alike: tuple[object, ...] | None, queues: Mapping[str, QueueView]
    ) -> None:
        """A search alike found no victims on these rooms and queue figures: so will the next."""
        if alike is not None:
            self._fruitless[alike] = queues

    @cached_property
    def _owners(self) -> frozenset[str]:
        return frozenset(unit.key for unit in self.units)

    def rooms(self, state: ClusterState, gangs: Gangs) -> Rooms:
        """The room the nodes leave after what admitted gangs hold, counting what terminating
        pods free as free (and the rooms without victims built on it): once per cluster state
        and ledger, not once per gang asked about."""
        key = (state.generation, gangs.version)
        rooms = self._rooms.get(key)
        if rooms is None:
            after = dict(gangs.reserved())
            for node, amount in self.freeing.items():
                after[node] = after.get(node, EMPTY) - amount
            self._rooms.clear()
            self._fruitless.clear()  # (searched on the rooms before)
            rooms = self._rooms[key] = Rooms(state.view().nodes, after)
        return rooms


# A gang's victim units, with the priority they were listed at, kept with its view (the view
# is replaced when the gang changes; a PriorityClass may change without it).
_VICTIM_UNITS: MemoSlot[tuple[int, list[Unit]]] = MemoSlot("victim units")


def _units(state: ClusterState, gang: GangView) -> list[Unit]:
    """The running gang's victim units (none while a member terminates: it is being evicted;
    none while its bindings are being made: it does not run yet), kept with its view."""
    priority = gang_priority(state, gang)
    kept = gang.memo.get(_VICTIM_UNITS)
    if kept is not None and kept[0] == priority:
        return kept[1]
    placed = gang.placed
    if (
        not placed
        or any(p.metadata.deletion_timestamp for p in placed)
        or any(state.is_assumed(p.metadata.uid) for p in placed)
    ):
        units: list[Unit] = []
    else:
        node_of = {p.metadata.uid: state.placed_on(p.metadata.uid) or "" for p in placed}
        units = units_of(gang, priority, node_of)
    gang.memo.put(_VICTIM_UNITS, (priority, units))
    return units


def wanting(order: Order, gangs: Gangs) -> list[str]:
    """The gangs Lahar refused for want of capacity, most deserving first: those the scheduler
    asked about, and those whose members Lahar's gate holds (Lahar answers for them; in a full
    cluster it may never have recorded their refusal). Not a gang the scheduler never asked
    about: it may never send it, for rules Lahar does not model."""
    return [
        key
        for key, turn in order.turns.items()
        if turn.rejection is not None
        and turn.rejection.cause in WANTS_CAPACITY
        and (gangs.refusal(key) is not None or gangs.holds(key))
    ]


def victims_for(
    state: ClusterState,
    gangs: Gangs,
    order: Order,
    pool: Pool,
    *,
    key: str,
    rules: Rules,
) -> Preemption | None:
    """Whom to evict so that gang `key` fits whole; None when nobody may be, or when the pods
    already terminating will make room for it."""
    gang = view_gang(state, key)
    members, _ = members_to_plan(gang)
    if not members:
        return None
    rooms = pool.rooms(state, gangs)
    if rooms.base.fits(members):
        return None  # it fits once the terminating pods are gone: wait for them
    priority = gang_priority(state, gang)
    alike = pool.alike(key, members.shape, queue=gang.queue, priority=priority, rules=rules)
    if pool.fruitless(alike, order.queues):
        return None
    allowed = pool.eligible(key, gang.queue, priority, order.queues, rules)
    victims = None
    for units in by_kinship(allowed, gang.queue, order.queues):  # the closest kin first
        victims = choose(
            members,
            units,
            rooms.base.nodes,
            rooms.reserved,
            queues=order.queues,
            preemptor_queue=gang.queue,
            rooms=rooms,
        )
        if victims:
            break
    if not victims:
        pool.found_nothing(alike, order.queues)
    return Preemption(gang, victims) if victims else None


def candidates(
    state: ClusterState,
    gangs: Gangs,
    order: Order,
    rules: Rules,
    skip: frozenset[str] = frozenset(),
) -> Iterator[Preemption | None]:
    """For each gang short of capacity, most deserving first (those in `skip` left out), the
    preemption that lets it fit whole, or None. Lazy: the pool of victims is gathered when the
    first gang needs it, and a caller stops at the first preemption (the server yields to the
    event loop between gangs)."""
    pool: Pool | None = None
    for key in wanting(order, gangs):
        if key not in skip:
            pool = pool or Pool.of(state, gangs)
            yield victims_for(state, gangs, order, pool, key=key, rules=rules)
