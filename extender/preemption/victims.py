"""Choosing victims: the fewest whole gangs whose eviction lets a waiting gang fit.

A victim is a `Unit`: a whole running gang, or one member a gang has beyond its `minMember`
(taking it leaves the gang standing); never part of a gang's core, so no victim gang is left
below `minMember`. Which units are eligible (`sift`):

- *preempt* (`Rules.preempt`: the preempt plugin's `preempt` action, with the priority plugin):
  gangs of lower priority in the preemptor's own queue;
- *reclaim* (`Rules.reclaim`: its `reclaim` action, with the proportion plugin): gangs of other
  queues that are reclaimable and are allocated more than they deserve, while the preemptor's
  queue is allocated less than it deserves; each such queue may be taken below its deserved share
  by at most one unit (its last). In a queue tree the lowest common ancestor of the two queues
  decides (`sides`): every queue on the victim's side below it is reclaimable and is allocated
  more than it deserves, and every queue on the preemptor's side less; the rule of the last unit
  holds for each queue on the victim's side. Units of the closest kin are tried first (`kinship`): a
  starved leaf reclaims from its siblings before its cousins.

Never eligible, whatever the rules, a unit with a *protected* pod (`Unit.protected`, read by
`api.preemptable`): a pod whose `volcano.sh/preemptable` (annotation, else label) is false or
unreadable, a pod of a PodGroup whose own says so, or a pod Volcano's conformance keeps (in
`kube-system`, or of priorityClassName `system-cluster-critical` or `system-node-critical`).
`sift` also lists the units that only their protection keeps out, for saying why nobody may be
evicted.

The victim rules of the gang and drf plugins, on unless their policy entry switches them off as
Volcano's does (its preemptableFns, which its preempt action asks, and reclaimableFns, which its
reclaim action asks):

- gang, for preempt (`Rules.spare_members_only`, `enablePreemptable`) and for reclaim
  (`Rules.reclaims_spares_only`, `enableReclaimable`): only members beyond a gang's minMember,
  never a whole gang;
- drf, for preempt (`Rules.keeps_share`, `enablePreemptable`): a unit only while its gang's
  dominant share once it is evicted is at least the preemptor's once placed (within
  `SHARE_DELTA`), each unit judged on its own.

`choose` finds the cheapest set (fewest pods, then least cpu, then memory) that lets the
preemptor's members all be placed: greedy by cost and then pruned gives a first answer (always
irreducible: no unit in it can be spared); an exact search over smaller sets then improves on it
while a budget of placement tries lasts, skipping sets that free less than the gang lacks. Pods
outside PodGroups are never victims. Pure.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial

from extender.api.engine_settings import Rules
from extender.api.objects import Pod
from extender.api.preemptable import group_protection, pod_protection
from extender.api.resources import CPU, EMPTY, MEMORY, Resources
from extender.cache.snapshot import NodeInfo
from extender.gangs.fairness import dominant_share, overused, share
from extender.gangs.members import GangView, Planned
from extender.gangs.placement import Room, at_least_zero
from extender.gangs.queues import QueueView

SEARCH_BUDGET = 1_000  # placement tries of the exact search before it settles for greedy's
ENUMERATION_LIMIT = 50_000  # sets of one size listed at most
SHARE_DELTA = 1e-6  # drf's rule: shares this close count as equal (Volcano's shareDelta)


@dataclass(frozen=True)
class Unit:
    key: str  # the victim gang
    queue: str
    priority: int
    pods: tuple[tuple[Pod, str], ...]  # each with its node
    whole: bool  # the whole gang (else one spare member)
    allocated: Resources = EMPTY  # what the whole gang's placed members use (drf's rule)
    protected: str = ""  # why it may never be evicted ("" when it may): `api.preemptable`

    @cached_property
    def request(self) -> Resources:
        return sum((pod.request for pod, _ in self.pods), EMPTY)

    @cached_property
    def cost(self) -> tuple[int, int, int]:
        return cost(pod for pod, _ in self.pods)

    @cached_property
    def by_node(self) -> dict[str, Resources]:
        """What its pods request, per node they are on."""
        freed: dict[str, Resources] = {}
        for pod, node in self.pods:
            freed[node] = freed.get(node, EMPTY) + pod.request
        return freed


def units_of(gang: GangView, priority: int, node_of: Mapping[str, str]) -> list[Unit]:
    """The ways to evict from a running gang: whole, or each member beyond minMember (the
    unprotected members first), each unit protected when its PodGroup or one of its pods is."""
    placed = tuple((pod, node_of[pod.metadata.uid]) for pod in gang.placed)
    if not placed:
        return []
    unit = partial(Unit, gang.key, gang.queue, priority, allocated=gang.allocated)
    group = group_protection(gang.group.metadata) if gang.group is not None else ""
    why = {pod.metadata.uid: group or pod_protection(pod) for pod, _ in placed}
    units = [unit(placed, whole=True, protected=next(filter(None, why.values()), ""))]
    spare = gang.ready - max(gang.min_member, 1)
    if spare > 0 and not (gang.group and gang.group.spec.min_task_member):
        by_name = sorted(placed, key=lambda p: p[0].metadata.name, reverse=True)
        members = sorted(by_name, key=lambda p: bool(why[p[0].metadata.uid]))  # (stable)
        for member in members[:spare]:
            units.append(unit((member,), whole=False, protected=why[member[0].metadata.uid]))
    return units


def sift(
    units: Iterable[Unit],
    queue: str,
    priority: int,
    queues: Mapping[str, QueueView],
    rules: Rules,
    *,
    share_of: float = 0.0,
    total: Mapping[str, int] = EMPTY,
) -> tuple[list[Unit], list[Unit]]:
    """The units a gang of `priority` in `queue` may take (see the module docstring), and those
    the rules would let it take but their protection keeps out (`Unit.protected`); each cheapest
    first. `share_of`: its dominant share once placed, of the cluster's `total` (drf's rule)."""
    own = queues.get(queue)
    chosen: list[Unit] = []
    kept: list[Unit] = []
    verdicts: dict[str, bool] = {}  # per other queue, whether it may be reclaimed from
    for unit in units:
        if unit.queue == queue:
            if (
                rules.preempt
                and unit.priority < priority
                and _preemptable(unit, rules, share_of, total)
            ):
                (kept if unit.protected else chosen).append(unit)
            continue
        if not rules.reclaim or own is None or own.overused:
            continue
        allowed = verdicts.get(unit.queue)
        if allowed is None:
            other = queues.get(unit.queue)
            allowed = verdicts[unit.queue] = other is not None and _reclaimable(own, other)
        if allowed and not (rules.reclaims_spares_only and unit.whole):
            (kept if unit.protected else chosen).append(unit)
    return _by_cost(chosen), _by_cost(kept)


def _by_cost(units: list[Unit]) -> list[Unit]:
    return sorted(units, key=lambda u: (u.cost, u.priority, u.key))


def _preemptable(unit: Unit, rules: Rules, share_of: float, total: Mapping[str, int]) -> bool:
    """Whether the victim rules of gang and drf (those on) let preempt take `unit`."""
    if rules.spare_members_only and unit.whole:
        return False
    if rules.keeps_share:
        left = dominant_share(unit.allocated - unit.request, total)
        return left >= share_of - SHARE_DELTA
    return True


def sides(own: QueueView, other: QueueView) -> tuple[list[QueueView], list[QueueView]]:
    """The queues below the lowest common ancestor of `own` and `other`, on each side, each
    from the queue itself up (two top-level queues: each alone)."""
    if own.parent is None and other.parent is None:
        return [own], [other]
    mine, theirs = list(own.lineage()), list(other.lineage())
    while mine and theirs and mine[-1] is theirs[-1]:
        mine.pop()
        theirs.pop()
    return mine, theirs


def kinship(own: QueueView, other: QueueView) -> int:
    """How many queues (root left out) are above both: 0 for cousins only under root."""
    return len(list(own.lineage())) - len(sides(own, other)[0])


def by_kinship(
    units: Sequence[Unit], queue: str, queues: Mapping[str, QueueView]
) -> Iterator[list[Unit]]:
    """`units` (eligible for a gang of `queue`) narrowed to the closest kin first, then widened
    level by level up the tree: the preemptor's own queue's, with those of its siblings' queues,
    then its cousins' too, and so on; in a flat tree, all of them at once."""
    own = queues.get(queue)
    others = {unit.queue for unit in units if unit.queue != queue}
    if own is None or not others:
        yield list(units)
        return
    kin = {name: kinship(own, queues[name]) for name in others}
    levels = sorted(set(kin.values()), reverse=True)
    for level in levels:
        yield [unit for unit in units if unit.queue == queue or kin[unit.queue] >= level]


def _reclaimable(own: QueueView, other: QueueView) -> bool:
    mine, theirs = sides(own, other)
    if not mine or not theirs:  # one is above the other (work left in a queue that became a
        return False  # parent): neither reclaims from the other
    return all(not view.overused for view in mine) and all(
        view.queue.spec.reclaimable and view.overused for view in theirs
    )


def choose(
    members: Sequence[Pod],
    units: Sequence[Unit],
    nodes: Mapping[str, NodeInfo],
    reserved: Mapping[str, Resources],
    *,
    queues: Mapping[str, QueueView],
    preemptor_queue: str,
    rooms: Rooms | None = None,
) -> list[Unit] | None:
    """The cheapest valid set of `units` (sorted by cost) after whose eviction all `members`
    fit; None when even all of them would not do. `rooms`: the rooms of a pass, kept for the
    next gang asking about the same nodes, reservations and units.

    Members kept inside one HyperNode (a hard network topology: `Planned.reach`) are looked for one
    HyperNode at a time, among the units with pods on its nodes only, and the cheapest set over
    all of them is taken: freeing the HyperNode that costs the fewest victims, with the exact
    search working on a few units instead of every one in the cluster."""
    rooms = rooms if rooms is not None else Rooms(nodes, reserved)
    reach = members.reach if isinstance(members, Planned) else None
    within = reach.gang if reach is not None else None
    if within is None or not within.hard or len(within.domains) < 2:
        return _choose(
            members,
            units,
            nodes,
            reserved,
            queues=queues,
            preemptor_queue=preemptor_queue,
            rooms=rooms,
        )
    need = sum(pod.request[CPU] for pod in members)
    best: list[Unit] | None = None
    for domain in within.domains:
        if sum(nodes[n].allocatable[CPU] for n in domain.nodes if n in nodes) < need:
            continue  # too small for the gang even empty
        inside = [u for u in units if any(node in domain.nodes for _, node in u.pods)]
        found = _choose(
            members,
            inside,
            nodes,
            reserved,
            queues=queues,
            preemptor_queue=preemptor_queue,
            rooms=rooms,
        )
        if found is not None and (best is None or _cost(found) < _cost(best)):
            best = found
    return best


def _choose(
    members: Sequence[Pod],
    units: Sequence[Unit],
    nodes: Mapping[str, NodeInfo],
    reserved: Mapping[str, Resources],
    *,
    queues: Mapping[str, QueueView],
    preemptor_queue: str,
    rooms: Rooms,
) -> list[Unit] | None:
    """`choose`, over every unit of `units`."""

    def valid(chosen: Sequence[Unit]) -> bool:
        return _valid(chosen, queues, preemptor_queue)

    base = rooms.base

    def fits(chosen: Sequence[Unit]) -> bool:
        return valid(chosen) and _fits(members, chosen, base)

    if not units or not rooms.without(units).fits(members):
        return None
    # What must be freed at the least, summed over the cluster: a set freeing less cannot do,
    # whatever the nodes (checked before any placement is tried).
    free = sum(
        (at_least_zero(info.free - reserved.get(name, EMPTY)) for name, info in nodes.items()),
        EMPTY,
    )
    need = sum((pod.request for pod in members), EMPTY) - free
    need_cpu, need_memory = need.get(CPU, 0), need.get(MEMORY, 0)
    best = _greedy(units, members, base, queues, preemptor_queue)  # an upper bound, quickly
    best_cost = _cost(best) if best is not None else None
    tries = 0
    for size in range(1, len(units) + 1):
        if best_cost is not None and size > best_cost[0]:
            break  # every unit is at least one pod: a larger set cannot evict fewer
        if math.comb(len(units), size) > ENUMERATION_LIMIT:
            break  # too many sets to even list: keep the greedy answer
        for combo in itertools.combinations(units, size):
            if _overlap(combo):
                continue  # a gang both whole and by a spare member: never valid
            # Without overlap a set's cost and request are its units' (kept per unit): the
            # search lists tens of thousands of sets, most of them cut here without a sum of pods.
            combo_cost = _sum_costs(combo)
            if best_cost is not None and combo_cost >= best_cost:
                continue
            if combo_cost[1] < need_cpu or combo_cost[2] < need_memory:
                continue  # frees too little cpu or memory (the cost has both summed)
            if need.shortfall(sum((unit.request for unit in combo), EMPTY)) is not None:
                continue
            tries += 1
            if tries > SEARCH_BUDGET:
                return best
            if fits(combo):
                best, best_cost = list(combo), combo_cost
    return best


class Rooms:
    """The room `reserved` leaves of `nodes`, and the rooms left once every unit of a list is
    evicted, each built once: a pass asks about gang after gang with the same victims (those
    of one queue and priority), and most gangs are refused already with every victim gone."""

    def __init__(self, nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]) -> None:
        self.base, self.reserved = Room(nodes, reserved), reserved
        self._without: dict[tuple[int, ...], Room] = {}  # by the units' ids (kept alive below)
        self._units: list[Sequence[Unit]] = []

    def without(self, units: Sequence[Unit]) -> Room:
        """The room once all `units` are evicted (a gang both whole and by spare members taken
        whole)."""
        key = tuple(map(id, units))
        room = self._without.get(key)
        if room is None:
            wholes = {unit.key for unit in units if unit.whole}
            everything = [unit for unit in units if unit.whole or unit.key not in wholes]
            room = self._without[key] = _freed(everything, self.base)
            self._units.append(units)
        return room


def _overlap(units: Sequence[Unit]) -> bool:
    """Some gang is in `units` both whole and by a spare member (their pods overlap)."""
    if len(units) < 2:
        return False
    keys = [unit.key for unit in units]
    if len(set(keys)) == len(keys):
        return False
    wholes = {unit.key for unit in units if unit.whole}
    return any(not unit.whole and unit.key in wholes for unit in units)


def _sum_costs(units: Sequence[Unit]) -> tuple[int, int, int]:
    pods = cpu = memory = 0
    for unit in units:
        count, unit_cpu, unit_memory = unit.cost
        pods, cpu, memory = pods + count, cpu + unit_cpu, memory + unit_memory
    return pods, cpu, memory


def _greedy(
    units: Sequence[Unit],
    members: Sequence[Pod],
    base: Room,
    queues: Mapping[str, QueueView],
    own: str,
) -> list[Unit] | None:
    """Units in cost order, each that keeps the set valid, until the members fit; then pruned,
    costliest first, of every unit the rest fit without. The set grows at the cost of the unit
    added, not of the set: `_Taking` tells whether a unit keeps it valid, and one room follows
    it (a unit added is freed on it, one pruned taken back; whole numbers, so the room is
    exactly what freeing the set on `base` makes)."""
    room = base.copy()
    taking = _Taking(queues, own)
    chosen: list[Unit] = []
    for unit in units:
        if taking.allows(unit):
            taking.add(unit)
            chosen.append(unit)
            _free(room, unit.by_node)
            if room.fits(members):
                break
    else:
        return None
    for unit in sorted(chosen, key=lambda u: u.cost, reverse=True):  # prune what is not needed
        rest = [u for u in chosen if u is not unit]
        if rest and _valid(rest, queues, own):
            _free(room, unit.by_node, back=True)
            if room.fits(members):
                chosen = rest
            else:
                _free(room, unit.by_node)
    return chosen


class _Taking:
    """What a growing valid set of units takes (`_valid`), kept so that whether one unit more
    keeps it valid costs that unit: the gangs taken whole and by spare members, and per queue
    reclaimed from (`_charged`) the sum of what it gives up and the part ranked last by share
    (a stable sort puts the latest of equal shares last), which alone may take it below its
    deserved share."""

    def __init__(self, queues: Mapping[str, QueueView], own: str) -> None:
        self.queues, self.own = queues, own
        self.wholes: set[str] = set()
        self.spares: set[str] = set()
        self.given: dict[str, tuple[Resources, Resources, float]] = {}  # total, last, its share

    def allows(self, unit: Unit) -> bool:
        if unit.key in (self.spares if unit.whole else self.wholes):
            return False
        if unit.queue == self.own:
            return True
        for view in _charged(self.queues, self.own, unit.queue):
            total, last, _ = self._with(view, unit)
            if not overused(view.allocated - (total - last), view.deserved):
                return False
        return True

    def add(self, unit: Unit) -> None:
        (self.wholes if unit.whole else self.spares).add(unit.key)
        if unit.queue != self.own:
            for view in _charged(self.queues, self.own, unit.queue):
                self.given[view.name] = self._with(view, unit)

    def _with(self, view: QueueView, unit: Unit) -> tuple[Resources, Resources, float]:
        """The queue's sum and last-ranked part, were `unit` taken too."""
        total, last, last_share = self.given.get(view.name, (EMPTY, EMPTY, -math.inf))
        ranked = share(unit.request, view.deserved)
        if ranked >= last_share:
            last, last_share = unit.request, ranked
        return total + unit.request, last, last_share


def cost(pods: Iterable[Pod]) -> tuple[int, int, int]:
    """What evicting these pods costs, cheapest first: how many, then cpu, then memory."""
    listed = list(pods)
    request = sum((pod.request for pod in listed), EMPTY)
    return (len(listed), request[CPU], request[MEMORY])


def _cost(units: Iterable[Unit]) -> tuple[int, int, int]:
    """The cost of a set of units, a pod named by two of them counted once."""
    pods = {pod.metadata.uid: pod for unit in units for pod, _ in unit.pods}
    return cost(pods.values())


def _valid(chosen: Sequence[Unit], queues: Mapping[str, QueueView], own: str) -> bool:
    """No gang both whole and by spare members; a reclaimed queue taken below its deserved share
    by at most its last unit."""
    wholes = {unit.key for unit in chosen if unit.whole}
    if any(not unit.whole and unit.key in wholes for unit in chosen):
        return False
    taken: dict[str, list[Resources]] = {}
    for unit in chosen:
        if unit.queue != own:
            for view in _charged(queues, own, unit.queue):
                taken.setdefault(view.name, []).append(unit.request)
    for name, requests in taken.items():
        view = queues[name]
        ranked = sorted(requests, key=lambda request: share(request, view.deserved))
        rest = view.allocated - sum(ranked[:-1], EMPTY)  # all but the largest
        if not overused(rest, view.deserved):
            return False
    return True


def _charged(queues: Mapping[str, QueueView], own: str, other: str) -> list[QueueView]:
    """The queues a unit of `other` taken for a gang of `own` is reclaimed from: those on its
    side below their lowest common ancestor (in a flat tree, `other` alone)."""
    view = queues[other]
    if view.parent is None and queues[own].parent is None:
        return [view]
    return sides(queues[own], view)[1]


def _fits(members: Sequence[Pod], chosen: Sequence[Unit], base: Room) -> bool:
    """Whether every member finds a node once `chosen` are evicted from `base` (the room left
    by what is reserved, built once per search: each try copies it instead of sorting every node
    again)."""
    return _freed(chosen, base).fits(members)


def _freed(chosen: Sequence[Unit], base: Room) -> Room:
    """A copy of `base` with the pods of `chosen` evicted: what they free summed per node and
    freed once per node when no gang is named twice (then no pod is), else pod by pod, each
    pod once."""
    room = base.copy()
    if len({unit.key for unit in chosen}) == len(chosen):
        freed: dict[str, Resources] = {}
        for unit in chosen:
            for node, amount in unit.by_node.items():
                freed[node] = freed.get(node, EMPTY) + amount
        _free(room, freed)
        return room
    seen: set[str] = set()
    for unit in chosen:
        for pod, node in unit.pods:
            if pod.metadata.uid not in seen:
                seen.add(pod.metadata.uid)
                room.take(node, EMPTY - pod.request)  # frees it
    return room


def _free(room: Room, freed: Mapping[str, Resources], *, back: bool = False) -> None:
    """Free what `freed` says per node on `room` (`back`: take it back again)."""
    for node, amount in freed.items():
        room.take(node, amount if back else EMPTY - amount)
