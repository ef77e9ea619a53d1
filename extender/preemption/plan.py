"""Lahar's own preemption and reclaim: for the most deserving gang that cannot fit, whom to evict.

kube-scheduler's preemption cannot help a gang: its dry run uses only in-tree filters (resource fit
is Lahar's) and knows nothing of gangs or queues. So Lahar decides itself, like Volcano's preempt
and reclaim actions: for the gangs the fair order refused for want of capacity (`wanting`, most
deserving first), `victims_for` picks the fewest whole victim gangs (or spare members) that let
the whole gang fit (`preemption.victims`: by the rules the policy turns on, never a protected
pod; in a queue tree, from the closest kin first), from a `Pool` gathered once per pass.
Capacity that terminating pods are about to free counts as free, so victims already evicted are
not replaced by more. The server evicts them and reports.

When no victims are found but protected units would have made room (a pod or PodGroup with
`volcano.sh/preemptable: false`, a pod conformance keeps), a second search counting them says
which (`Protected`): the last such verdict per gang is kept with the cluster state, weakly,
for `lahar explain` (`protected_victims`); a search that finds victims, or nothing to say,
drops it. Otherwise pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from weakref import WeakKeyDictionary

from extender.api.engine_settings import Rules
from extender.api.objects import Pod
from extender.api.resources import EMPTY, Resources
from extender.cache.state import ClusterState
from extender.gangs.fairness import dominant_share
from extender.gangs.ledger import Gangs
from extender.gangs.members import GangView, MemoSlot, Shape, gang_priority, view_gang
from extender.gangs.order import Order
from extender.gangs.placement import members_to_plan
from extender.gangs.queues import QueueView
from extender.gangs.refusals import WANTS_CAPACITY
from extender.preemption.victims import Rooms, Unit, by_kinship, choose, sift, units_of


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
class Protected:
    """Why nobody is evicted for a gang although evictions would make room: the victims a search
    counting protected units too would take, each named by its gang with why it is protected."""

    victims: tuple[tuple[str, str], ...]  # (victim gang, why it may not be evicted)

    @property
    def message(self) -> str:
        named = ", ".join(f"{key} ({why})" for key, why in self.victims)
        return f"preemption: the only victims that would make room are not preemptable: {named}"


@dataclass(frozen=True)
class Pool:
    """What a preemption pass may take, gathered once per pass: every running gang's victim
    units (gangs with a member already terminating are being evicted: not again; gangs whose
    bindings are still being made are not running yet), and per node what terminating pods are
    about to free."""

    units: list[Unit]
    freeing: dict[str, Resources]
    total: Resources = EMPTY  # what the schedulable nodes offer together (drf's denominator)
    _rooms: dict[tuple[int, int], Rooms] = field(default_factory=dict, compare=False, repr=False)
    # The units a gang with none of its own in the pool may take, and those only their
    # protection keeps out (`victims.sift`), per queue, priority, rules and (with drf's rule)
    # share, with the queue figures they were chosen by.
    _sifted: dict[
        tuple[str, int, Rules, float | None],
        tuple[Mapping[str, QueueView], tuple[list[Unit], list[Unit]]],
    ] = field(default_factory=dict, compare=False, repr=False)
    # Searches that found no victims, by what they depend on besides the rooms (forgotten
    # when the rooms are built anew: `alike`), with the queue figures they searched and what
    # protected units would have made room.
    _fruitless: dict[tuple[object, ...], tuple[Mapping[str, QueueView], Protected | None]] = field(
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
        return cls(units, freeing, state.capacity())

    def sift(
        self,
        key: str,
        queue: str,
        priority: int,
        queues: Mapping[str, QueueView],
        rules: Rules,
        *,
        share_of: float = 0.0,
    ) -> tuple[list[Unit], list[Unit]]:
        """The units gang `key` of `queue` and `priority` (and dominant share `share_of` once
        placed) may take, and those only their protection keeps out (`victims.sift`), its own
        left out; listed once per queue and priority for the gangs that have none here (most
        gangs wanting capacity have nothing running)."""
        if key in self._owners:
            others = [unit for unit in self.units if unit.key != key]
            return sift(others, queue, priority, queues, rules, share_of=share_of, total=self.total)
        index = (queue, priority, rules, share_of if rules.keeps_share else None)
        kept = self._sifted.get(index)
        if kept is not None and kept[0] is queues:
            return kept[1]
        sifted = sift(
            self.units, queue, priority, queues, rules, share_of=share_of, total=self.total
        )
        self._sifted[index] = (queues, sifted)
        return sifted

    def alike(
        self,
        key: str,
        shape: Shape | None,
        *,
        queue: str,
        priority: int,
        rules: Rules,
        share_of: float = 0.0,
    ) -> tuple[object, ...] | None:
        """What a victim search for gang `key` depends on besides the rooms and queue figures,
        when another gang's search says what it finds: its members' shape (None: they do not
        run anywhere), queue, priority, the rules and (with drf's rule) its share once placed,
        with no units of its own in the pool."""
        if shape is None or key in self._owners:
            return None
        return (shape, queue, priority, rules, share_of if rules.keeps_share else None)

    def fruitless(self, alike: tuple[object, ...] | None, queues: Mapping[str, QueueView]) -> bool:
        """Whether a search alike found no victims on these rooms and queue figures."""
        if alike is None:
            return False
        kept = self._fruitless.get(alike)
        return kept is not None and kept[0] is queues

    def found_nothing(
        self,
        alike: tuple[object, ...] | None,
        queues: Mapping[str, QueueView],
        protected: Protected | None = None,
    ) -> None:
        """A search alike found no victims on these rooms and queue figures (and `protected`
        would have made room): so will the next."""
        if alike is not None:
            self._fruitless[alike] = (queues, protected)

    def protected_alike(self, alike: tuple[object, ...] | None) -> Protected | None:
        """What protected units would have made room for a search alike that found nothing."""
        kept = self._fruitless.get(alike) if alike is not None else None
        return kept[1] if kept is not None else None

    @cached_property
    def _owners(self) -> frozenset[str]:
        return frozenset(unit.key for unit in self.units)

    def rooms(self, state: ClusterState, gangs: Gangs) -> Rooms:
        """The room the nodes leave after what admitted gangs reserve, counting what terminating
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
    already terminating will make room for it. When nobody may be but protected units would
    have made room, which ones is kept for `protected_victims`."""
    gang = view_gang(state, key)
    members, _ = members_to_plan(gang)
    if not members:
        _note(state, key, None)
        return None
    rooms = pool.rooms(state, gangs)
    if rooms.base.fits(members):
        _note(state, key, None)
        return None  # it fits once the terminating pods are gone: wait for them
    priority = gang_priority(state, gang)
    share_of = _share_once_placed(gang, members, pool.total) if rules.keeps_share else 0.0
    alike = pool.alike(
        key, members.shape, queue=gang.queue, priority=priority, rules=rules, share_of=share_of
    )
    if pool.fruitless(alike, order.queues):
        _note(state, key, pool.protected_alike(alike))
        return None
    allowed, kept = pool.sift(key, gang.queue, priority, order.queues, rules, share_of=share_of)
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
    protected = None
    if not victims:
        protected = _protecting(
            members, allowed, kept, rooms=rooms, queues=order.queues, own=gang.queue
        )
        pool.found_nothing(alike, order.queues, protected)
    _note(state, key, protected)
    return Preemption(gang, victims) if victims else None


def _share_once_placed(gang: GangView, members: Sequence[Pod], total: Resources) -> float:
    """The gang's dominant share once the members a preemption makes room for are placed."""
    return dominant_share(gang.allocated + sum((pod.request for pod in members), EMPTY), total)


def _protecting(
    members: Sequence[Pod],
    allowed: list[Unit],
    kept: list[Unit],
    *,
    rooms: Rooms,
    queues: Mapping[str, QueueView],
    own: str,
) -> Protected | None:
    """When protected units (`kept`) with the `allowed` ones would make room for `members`, the
    protected ones of the cheapest such set; None when there are none, or they would not do."""
    if not kept:
        return None
    units = sorted([*allowed, *kept], key=lambda u: (u.cost, u.priority, u.key))
    found = choose(
        members,
        units,
        rooms.base.nodes,
        rooms.reserved,
        queues=queues,
        preemptor_queue=own,
        rooms=rooms,
    )
    named: dict[str, str] = {}
    for unit in found or ():
        if unit.protected:
            named.setdefault(unit.key, unit.protected)
    return Protected(tuple(sorted(named.items()))) if named else None


# Per cluster state (kept weakly), the last search's `Protected` per gang (`protected_victims`).
_PROTECTED: WeakKeyDictionary[ClusterState, dict[str, Protected]] = WeakKeyDictionary()


def _note(state: ClusterState, key: str, protected: Protected | None) -> None:
    """Keep (or drop) gang `key`'s note; a new note drops those of gangs gone since."""
    kept = _PROTECTED.get(state)
    if protected is not None:
        if kept is None:
            kept = _PROTECTED[state] = {}
        for gone in [k for k in kept if k not in state.pod_groups]:
            del kept[gone]
        kept[key] = protected
    elif kept is not None:
        kept.pop(key, None)


def protected_victims(state: ClusterState, key: str) -> Protected | None:
    """Why the last victim search for gang `key` found nobody although evictions would make
    room: the protected victims (None: it found victims, had nothing to say, or never ran, as
    without the preempt plugin)."""
    kept = _PROTECTED.get(state)
    return kept.get(key) if kept is not None else None


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


@dataclass(frozen=True)
class Asked:
    """What Lahar makes of the scheduler's preempt call for a member of gang `key`: victims it
    chose (`chosen`), or none, with why (`reason`); `hand_off`: the gang waits for capacity but
    another comes first, or Lahar's own search should run now (the preemption loop's)."""

    reason: str
    chosen: Preemption | None = None
    hand_off: bool = False


def asked_for(state: ClusterState, gangs: Gangs, key: str, rules: Rules) -> Asked:
    """The scheduler asks to preempt for a member of gang `key`: a gang admitted, standing or
    refused for another cause than want of capacity needs no victims; one that is not the most
    deserving of those refused for it is left to the preemption loop; for that one, the
    victims that let it fit whole (`victims_for`)."""
    gang = view_gang(state, key)
    settled = gangs.admission(key) is not None or gang.stands  # its capacity is reserved or used
    order = None if settled else gangs.order(state, state.view().nodes, asking=gang)
    turn = order.turns.get(key) if order is not None else None
    refusal = turn.rejection if turn is not None else None
    if order is None or refusal is None or refusal.cause not in WANTS_CAPACITY:
        why = refusal.message if refusal else f"gang {key}: admitted, or not refused in the order"
        return Asked(f"{why}; evicting would not let it in: no victims")
    handed = Asked(f"gang {key}: Lahar's preemptor evicts whole gangs itself", hand_off=True)
    if wanting(order, gangs)[:1] != [key]:
        return handed  # the preemptor serves the most deserving gang first: no search here
    chosen = victims_for(state, gangs, order, Pool.of(state, gangs), key=key, rules=rules)
    if chosen is None:
        return Asked(
            f"gang {key}: no valid victims (lower priority in queue {gang.queue}"
            ", or reclaimable queues above their share) that would let it fit whole"
        )
    return Asked(handed.reason, chosen=chosen, hand_off=True)
