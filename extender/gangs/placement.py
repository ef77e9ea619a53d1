"""Planning a gang onto nodes: which members to place, and where they go.

`members_to_plan` picks the pending members a gang still needs (each task's shortfall, then up
to `minMember`); `Room.place` puts members first fit onto the fullest nodes they may run on, on
what a `Room` leaves (the free capacity a walk plans on, kept in binpack's order); `plan_slots`
ties both to the PodGroup's `minResources`. Members whose gang asks for a network topology
(`Planned.reach`, see `gangs.topology`) are placed inside HyperNodes (`gangs.hyper_placement`), and
each slot keeps the nodes its member must stay on. Pure: the same inputs always give the same slots.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

from extender.api.objects import Pod
from extender.api.quantity import format_units
from extender.api.resources import CPU, EMPTY, MEMORY, Resources
from extender.cache.snapshot import NodeInfo, Snapshot
from extender.gangs.hyper_placement import place_within
from extender.gangs.members import GangView, Planned, Shape
from extender.gangs.refusals import Cause, Rejection

QUICK_REFUSAL = Rejection(Cause.NOT_ENOUGH_RESOURCES, "")  # `plan_slots` without reasons: no room
KINDS = 16  # kinds of pods (`Pod.placement_key`) whose order a room makes before it is copied


@dataclass(frozen=True)
class Slot:
    node: str
    request: Resources
    # The nodes of the HyperNode its member must stay in (its gang's, or its partition's; None:
    # anywhere). Members swap slots only within one.
    within: frozenset[str] | None = None


def plan_slots(
    gang: GangView, room: Room, *, with_reasons: bool = True
) -> tuple[dict[str, Slot], Rejection | None]:
    """Slots for the members the gang still needs in `room`, or why they do not fit. Without
    `with_reasons`, a refusal for want of room (NotEnoughResources) has no message and is found
    at the first member with no node: for a caller that only needs to know."""
    assert gang.group is not None
    spec, key = gang.group.spec, gang.key
    existing = gang.ready + len(gang.pending)
    chosen, reason = members_to_plan(gang)
    if existing < spec.min_member:
        message = f"gang {key}: {existing}/{spec.min_member} pods of gang {key} exist"
        reason = Rejection(Cause.NOT_ENOUGH_PODS, message)
    elif reason is None and spec.min_resources:
        reason = min_resources_shortfall(gang, room)
    if reason is not None:
        return {}, reason
    if chosen.reach is not None:
        return _plan_within(gang, chosen, room, with_reasons=with_reasons)
    assignment, failures = room.place(chosen, with_reasons=with_reasons)
    if failures and not with_reasons:
        return {}, QUICK_REFUSAL
    if failures:
        missing = sum(failures.values())
        why = ", ".join(sorted(failures))
        message = f"gang {key}: {missing} of {len(chosen)} members cannot be placed: {why}"
        return {}, Rejection(Cause.NOT_ENOUGH_RESOURCES, message)
    requests = {pod.metadata.uid: pod.request for pod in chosen}
    return {uid: Slot(node, requests[uid]) for uid, node in assignment.items()}, None


def _plan_within(
    gang: GangView, chosen: Planned, room: Room, *, with_reasons: bool
) -> tuple[dict[str, Slot], Rejection | None]:
    """`plan_slots` for a gang whose network topology asks where its members go: each slot
    keeps the nodes of the HyperNode its member must stay in."""
    placement = place_within(room, chosen, with_reasons=with_reasons)
    if placement.why is not None:
        message = f"gang {gang.key}: {placement.why}" if with_reasons else ""
        return {}, Rejection(Cause.NOT_ENOUGH_RESOURCES, message)
    return {
        pod.metadata.uid: Slot(
            placement.nodes[pod.metadata.uid], pod.request, placement.within.get(pod.metadata.uid)
        )
        for pod in chosen
    }, None


def nodes_used(gang: GangView, room: Room) -> frozenset[str] | None:
    """The nodes `plan_slots` would put the gang's members on in `room` (None when it refuses):
    whether the gang fits, and where, without its slots."""
    assert gang.group is not None
    spec = gang.group.spec
    if gang.ready + len(gang.pending) < spec.min_member:
        return None
    chosen, reason = members_to_plan(gang)
    if reason is not None:
        return None
    if spec.min_resources and min_resources_shortfall(gang, room) is not None:
        return None
    return room.nodes_for(chosen)


def members_to_plan(gang: GangView) -> tuple[Planned, Rejection | None]:
    """The pending members to plan: each task's shortfall first, then up to minMember
    (`GangView.to_plan`: worked out once per view, walk after walk; not to be changed)."""
    return gang.to_plan


def min_resources_shortfall(gang: GangView, room: Room) -> Rejection | None:
    """Why the room has no space for the gang's minResources (less what its placed members use):
    the free capacity summed over the nodes some pending member may run on falls short. The sum
    only grows node by node, so the look ends at the first node where it covers the need (on a
    cluster with room, the first few); only a refusal sums every node, for its message."""
    assert gang.group is not None
    needed = gang.group.spec.min_resources
    for pod in gang.placed:
        needed = needed - pod.request
    if needed.shortfall(EMPTY) is None:
        return None
    free = EMPTY
    for name, left in room.free.items():  # on the nodes some pending member may run on
        info = room.nodes[name]
        if any(pod.may_run_on(info.labels, info.taints, name) for pod in gang.pending):
            free = free + at_least_zero(left)
            if needed.shortfall(free) is None:
                return None
    short = needed.shortfall(free)
    if short is None:
        return None
    return Rejection(
        Cause.MIN_RESOURCES,
        f"gang {gang.key}: minResources need {short} {format_units(needed[short], short)}, "
        f"{format_units(max(free[short], 0), short)} free on the nodes its pods may run on",
    )


def at_least_zero(resources: Resources) -> Resources:
    return Resources({name: max(amount, 0) for name, amount in resources.items()})


def place(
    members: list[Pod], nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]
) -> tuple[dict[str, str], Counter[str]]:
    """`Room.place` on what `reserved` leaves of `nodes`."""
    return Room(nodes, reserved).place(members)


def fits(
    members: Sequence[Pod], nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]
) -> bool:
    """`Room.fits` on what `reserved` leaves of `nodes`."""
    return Room(nodes, reserved).fits(members)


class Room:
    """The free capacity of every schedulable node after what is taken off it (`reserved`, then
    `take`), with the nodes kept in binpack's order (fullest first: least free cpu, then memory,
    then name). A member's first fit bisects to the nodes with enough cpu instead of passing over
    every node, and taking capacity moves one node in the order; so a walk that plans hundreds of
    gangs on thousands of nodes stays cheap. What a placement found is kept, by the members'
    shape, until the room changes: in a walk, gangs of the same shape that do not fit one after
    another (most of them, in a full cluster) are placed once; on a room nothing is taken from,
    once per walk. (A plan places once: a placement that fits is taken, one that does not is
    remembered.) The free cpu of a group of nodes (a HyperNode's) is summed once and then kept up
    to date as the nodes in it change (`free_cpu_in`): a walk asks it of every HyperNode for
    every gang kept inside one.

    Which nodes a pod may run on (`allows`: nodeSelector, node affinity, taints) is worked out
    once per node for pods alike (`Pod.placement_key`), and kept by the room and its copies while
    no node's labels or taints change; and each such kind of pod has binpack's order of only the
    nodes it may run on, kept up to date beside the order of all (`_order_of`): first fit and
    the roomiest node skip, without looking, the nodes a pod may not use (tainted GPU nodes with
    idle cpu, for a CPU gang's members)."""

    __slots__ = (
        "_allowed",
        "_free_in",
        "_groups_of",
        "_keys",
        "_kinds",
        "_nodes_for",
        "_orders",
        "_placed",
        "_seen",
        "free",
        "nodes",
    )

    def __init__(
        self, nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources] | None = None
    ) -> None:
        """`reserved`: per node, the capacity taken off its free from the start."""
        self.nodes = nodes
        # Each node as the room last saw it (`nodes` may be the cache's own map, changed in
        # place: `update` tells what changed on a node from this, not from `nodes`).
        self._seen: dict[str, NodeInfo] = dict(nodes)
        self.free: dict[str, Resources] = {}
        for name, info in nodes.items():
            if not info.unschedulable:
                amount = reserved.get(name) if reserved else None
                self.free[name] = info.free if amount is None else info.free - amount
        self._keys = sorted(_rank(name, free) for name, free in self.free.items())
        self._free_in: dict[frozenset[str], int] = {}  # a group of nodes -> its free cpu
        self._groups_of: dict[str, set[frozenset[str]]] = {}  # node -> the groups kept with it
        # pods' placement key -> node -> whether they may run on it (shared with copies; the
        # kinds of pods that placed on the room or its copies, the last `KINDS` of them)
        self._allowed: dict[str, dict[str, bool]] = {}
        self._kinds: dict[str, Pod] = {}  # placement key -> a pod of it (shared with copies)
        # pods' placement key -> (a pod of that key, binpack's order of the nodes it may run on;
        # None: it may run on every node, and the order of all is its order)
        self._orders: dict[str, tuple[Pod, list[tuple[int, int, str]] | None]] = {}
        self._clear_memo()

    def _clear_memo(self) -> None:
        """Forget what placements found (the room changed). Keyed by `Planned.shape`."""
        self._nodes_for: dict[Shape, frozenset[str] | None] = {}
        # shape -> the words of a placement that failed: (position in the members, node), causes
        self._placed: dict[Shape, tuple[list[tuple[int, str]], Counter[str]]] = {}

    def copy(self) -> Room:
        """A room that changes apart from this one. This one first makes the order of every kind
        of pod its copies placed that it lacks: the copy takes it along instead of each copy
        making its own (a walk copies the room nothing is taken from, then places on the copy)."""
        for key, pod in self._kinds.items():
            if key not in self._orders:
                self._order_of(pod)
        made = Room.__new__(Room)
        made.nodes, made.free, made._keys = self.nodes, dict(self.free), list(self._keys)
        made._seen = self._seen  # (read by `update` only, which a copy is not given)
        made._nodes_for = dict(self._nodes_for)
        made._placed = dict(self._placed)
        # (the index is shared: a copy adds groups to it too, and each room adjusts only the
        # groups it keeps)
        made._free_in, made._groups_of = dict(self._free_in), self._groups_of
        made._allowed, made._kinds = self._allowed, self._kinds
        made._orders = {
            key: (pod, None if order is None else list(order))
            for key, (pod, order) in self._orders.items()
        }
        return made

    def take(self, name: str, amount: Resources) -> None:
        """Take `amount` off node `name`'s free (a negative amount frees), if it is schedulable."""
        before = self.free.get(name)
        if before is not None:
            self._set(name, before, before - amount)

    def update(self, nodes: Mapping[str, NodeInfo], changed: Iterable[str]) -> None:
        """Bring a room nothing is taken from up to `nodes`, which differ only in `changed`."""
        self.nodes, seen = nodes, self._seen
        changed = list(changed)
        if any(_placed_apart(seen.get(name), nodes.get(name)) for name in changed):
            # (where pods may run changed: worked out again, and not for the older copies)
            self._allowed, self._kinds, self._orders = {}, {}, {}
        for name in changed:
            info = nodes.get(name)
            if info is None:
                seen.pop(name, None)
            else:
                seen[name] = info
        for name in changed:
            info = nodes.get(name)
            after = info.free if info is not None and not info.unschedulable else None
            self._set(name, self.free.get(name), after)

    def _set(self, name: str, before: Resources | None, after: Resources | None) -> None:
        keys = self._keys
        if self._nodes_for or self._placed:
            self._clear_memo()
        if name in self._groups_of:
            delta = (max(after[CPU], 0) if after is not None else 0) - (
                max(before[CPU], 0) if before is not None else 0
            )
            kept = self._free_in
            for group in self._groups_of[name] if delta else ():
                if group in kept:
                    kept[group] += delta
        if before is not None:
            del keys[bisect_left(keys, _rank(name, before))]
        if after is not None:
            insort(keys, _rank(name, after))
        for pod, order in self._orders.values():
            if order is not None and self.allows(pod, name):
                if before is not None:
                    del order[bisect_left(order, _rank(name, before))]
                if after is not None:
                    insort(order, _rank(name, after))
        if after is not None:
            self.free[name] = after  # (set in place: a dict with holes copies slowly)
        elif before is not None:
            del self.free[name]

    def fits(self, members: Sequence[Pod]) -> bool:
        """Whether `place` finds every member a node (`nodes_for`, which stops at the first that
        has none: no reason needed, the victim search asks this hundreds of times a pass)."""
        return self.nodes_for(members) is not None

    def _known_not_to_fit(self, members: Planned) -> bool:
        """Whether a placement is known to find some member no node, without placing: the
        largest member has more cpu than any node it may run on has free, or members of the same
        shape found none on this room."""
        if members:
            order = self._order_of(members[0])
            if not order or members[0].request[CPU] > order[-1][0]:
                return True
        shape = members.shape
        return shape is not None and shape in self._nodes_for and self._nodes_for[shape] is None

    def nodes_for(self, members: Sequence[Pod]) -> frozenset[str] | None:
        """The nodes `place` puts the members on; None when some member finds none."""
        ordered = members if isinstance(members, Planned) else Planned(members)
        if self._known_not_to_fit(ordered):
            return None
        if ordered.reach is not None:
            placed = place_within(self, ordered, with_reasons=False)
            return None if placed.why is not None else frozenset(placed.nodes.values())
        shape = ordered.shape
        if shape is not None and shape in self._nodes_for:
            return self._nodes_for[shape]
        used: set[str] = set()
        taken: dict[str, Resources] = {}
        fail = any(self.place_run(ordered[s:e], taken, used=used) for s, e in ordered.runs)
        found = None if fail else frozenset(used)
        if shape is not None:
            self._nodes_for[shape] = found
        return found

    def place(
        self, members: list[Pod], *, with_reasons: bool = True
    ) -> tuple[dict[str, str], Counter[str]]:
        """First fit, largest member first, onto the fullest nodes first (binpack's preference),
        on nodes the member may run on (nodeSelector, required node affinity, taints). Takes
        nothing off the room.

        Returns member uid -> node, and per cause ("Insufficient cpu", or no node the member may
        run on) how many members found no node; without `with_reasons`, it stops at the first
        member with no node (or does not start, when members of the same shape found none on
        this room or the largest has more cpu than any node has free) and counts the members
        left under "" instead."""
        ordered = members if isinstance(members, Planned) else Planned(members)
        if not with_reasons and self._known_not_to_fit(ordered):
            return {}, Counter({"": len(ordered)})
        if ordered.reach is not None:
            placed = place_within(self, ordered, with_reasons=with_reasons)
            if placed.why is None:
                return placed.nodes, Counter()
            return {}, Counter({placed.why: len(ordered)})
        shape = ordered.shape
        kept = self._placed.get(shape) if with_reasons and shape is not None else None
        if kept is not None:
            positions, failed = kept
            return {ordered[i].metadata.uid: node for i, node in positions}, Counter(failed)
        taken: dict[str, Resources] = {}  # what this placement left on the nodes it used
        assignment: dict[str, str] = {}
        failures: Counter[str] = Counter()
        for start, end in ordered.runs:
            run = ordered[start:end]
            missing = self.place_run(run, taken, assignment)
            if missing and not with_reasons:
                failures[""] += missing
                break
            if missing:
                failures[self._why_not(run[0], taken)] += missing
        if failures and shape is not None:  # (a placement that fits is taken: the room changes)
            self._nodes_for[shape] = None
            if with_reasons:  # (without, what matters is that it did not fit: `_known_not_to_fit`)
                at = [
                    (i, assignment[pod.metadata.uid])
                    for i, pod in enumerate(ordered)
                    if pod.metadata.uid in assignment
                ]
                self._placed[shape] = (at, Counter(failures))
        return assignment, failures

    def place_run(
        self,
        run: Sequence[Pod],
        taken: dict[str, Resources],
        assignment: dict[str, str] | None = None,
        *,
        used: set[str] | None = None,
    ) -> int:
        """First fit for pods alike (`members.alike`), counted in `taken` and noted in
        `assignment` (or only the nodes, in `used`); how many found no node. The fullest node
        that takes one takes as many as fit before the next is looked for (first fit pod by pod
        would put them there too: the nodes before it did not take the first and have not
        changed), and once one finds no node the rest find none either (a failure takes
        nothing)."""
        pod = run[0]
        request = pod.request
        order = self._order_of(pod)
        placed = at = 0
        while placed < len(run):
            at = self._first_fit(pod, order, taken, at)
            if at < 0:
                return len(run) - placed
            name = order[at][2]
            left = taken[name] if name in taken else self.free[name]
            count = 1 if placed + 1 == len(run) else min(len(run) - placed, request.times_in(left))
            taken[name] = left - request.times(count)
            if assignment is not None:
                for member in run[placed : placed + count]:
                    assignment[member.metadata.uid] = name
            if used is not None:
                used.add(name)
            placed += count
        return 0

    def _first_fit(
        self,
        pod: Pod,
        order: Sequence[tuple[int, int, str]],
        taken: Mapping[str, Resources],
        start: int = 0,
    ) -> int:
        """The position in `order` (the pod's `_order_of`) of the fullest node with room for
        `pod`, after what `taken` counts (-1: none), looking from `start` on."""
        request = pod.request
        # The order is as it was before this placement, and placing only lowers what is free:
        # no node before the first with enough cpu (as it was) can fit now.
        first = bisect_left(order, (request[CPU],)) if request[CPU] else 0
        free = self.free
        for index in range(max(first, start), len(order)):
            name = order[index][2]
            if request.shortfall(taken[name] if name in taken else free[name]) is None:
                return index
        return -1

    def _order_of(self, pod: Pod) -> list[tuple[int, int, str]]:
        """Binpack's order of the nodes `pod` may run on (the order of all, for a pod that may
        run on any node and a room with no taints): made the first time pods like it ask, then
        kept up to date as nodes change."""
        key = pod.placement_key
        kept = self._orders.get(key)
        if kept is None:
            known = self._known(pod)
            try:  # (on a copy of a room that had none, made again: every node known)
                order: list[tuple[int, int, str]] | None = [
                    rank for rank in self._keys if known[rank[2]]
                ]
            except KeyError:  # (some node not looked at yet: each looked at, and kept)
                order = [rank for rank in self._keys if self._learn(pod, rank[2], known)]
            if order is not None and len(order) == len(self._keys):
                order = None  # (the order of all is kept up to date already)
            kept = self._orders[key] = (pod, order)
        return self._keys if kept[1] is None else kept[1]

    def _known(self, pod: Pod) -> dict[str, bool]:
        """What is known of the nodes pods of `pod`'s kind may run on (kept for the last
        `KINDS` kinds only: the room's copies make the order of each)."""
        key = pod.placement_key
        known = self._allowed.get(key)
        if known is None:
            kinds = self._kinds
            if len(kinds) >= KINDS:  # (the kind first seen longest ago goes)
                gone = next(iter(kinds))
                del kinds[gone], self._allowed[gone]
            kinds[key] = pod
            known = self._allowed[key] = {}
        return known

    def _learn(self, pod: Pod, name: str, known: dict[str, bool]) -> bool:
        """Whether `pod` may run on node `name`, kept in `known` (its kind's)."""
        found = known.get(name)
        if found is None:
            info = self.nodes[name]
            found = known[name] = (pod.runs_anywhere and not info.taints) or pod.may_run_on(
                info.labels, info.taints, name
            )
        return found

    def allows(self, pod: Pod, name: str) -> bool:
        """Whether `pod` may run on node `name` (nodeSelector, node affinity, taints)."""
        if pod.runs_anywhere and not self.nodes[name].taints:
            return True  # (the common case, known without a lookup)
        return self._learn(pod, name, self._allowed.get(pod.placement_key) or self._known(pod))

    def _why_not(self, pod: Pod, taken: Mapping[str, Resources]) -> str:
        """Why `pod` found no node: none it may run on, or what it lacks on the roomiest."""
        roomiest = self.roomiest(pod, taken)
        if roomiest is None:
            return "no node matches its nodeSelector, node affinity and tolerations"
        return f"Insufficient {pod.request.shortfall(taken.get(roomiest, self.free[roomiest]))}"

    def free_cpu_in(self, nodes: frozenset[str]) -> int:
        """The free cpu of the schedulable nodes among `nodes` (none counts below 0), summed the
        first time and kept up to date as they change."""
        found = self._free_in.get(nodes)
        if found is None:
            free = self.free
            found = self._free_in[nodes] = sum(max(free[n][CPU], 0) for n in nodes if n in free)
            groups_of = self._groups_of
            for name in nodes:
                groups_of.setdefault(name, set()).add(nodes)
        return found

    def in_order(self, names: Iterable[str]) -> list[str]:
        """The schedulable nodes among `names`, in binpack's order (fullest first)."""
        free = self.free
        return [key[2] for key in sorted(_rank(n, free[n]) for n in names if n in free)]

    def roomiest(self, pod: Pod, taken: Mapping[str, Resources] | None = None) -> str | None:
        """The node `pod` may run on with the most free cpu, then memory, then the first by name
        (what `taken` left on the nodes a placement used); None when it may run on none. Looks
        at the used nodes and at the run of the roomiest others in the pod's order, not at every
        node: a walk explains every member of every gang that waits."""
        taken = taken or {}
        found = [
            (left[CPU], left[MEMORY], name)
            for name, left in taken.items()
            if self.allows(pod, name)
        ]
        order = self._order_of(pod)  # (the nodes it may run on only)
        top = len(order) - 1
        while top >= 0 and order[top][2] in taken:
            top -= 1
        if top >= 0:  # the first by name of the roomiest nodes: the first of their run
            at = bisect_left(order, order[top][:2])
            while order[at][2] in taken:
                at += 1
            found.append(order[at])
        if not found:
            return None
        return min(found, key=lambda entry: (-entry[0], -entry[1], entry[2]))[2]

    @property
    def most_free_cpu(self) -> int:
        """The most cpu any node has free (-1 when there is no schedulable node)."""
        return self._keys[-1][0] if self._keys else -1

    def most_free(self) -> Iterator[str]:
        """The nodes from the one with most free cpu, then memory, equals by name."""
        run: list[str] = []
        mark: tuple[int, int] | None = None
        for cpu, memory, name in reversed(self._keys):
            if (cpu, memory) != mark:
                yield from reversed(run)
                run, mark = [], (cpu, memory)
            run.append(name)
        yield from reversed(run)

    def fitting(self, pod: Pod) -> list[str]:
        """The nodes `pod` alone fits on and may run on."""
        request = pod.request
        order = self._order_of(pod)
        first = bisect_left(order, (request[CPU],)) if request[CPU] else 0
        return [
            name
            for _, _, name in islice(order, first, None)
            if request.shortfall(self.free[name]) is None
        ]


class KeptRoom:
    """A room over the nodes nothing is taken from, kept from one call to the next and moved along
    with the nodes that changed since (`Snapshot.changed_since`) instead of sorted again."""

    __slots__ = ("_at", "_room")

    def __init__(self) -> None:
        self._at = -1  # the node generation the room is at
        self._room: Room | None = None

    def of(self, view: Snapshot) -> Room:
        """The room over `view`'s nodes (the same object, brought up to date, when it can be)."""
        changed = view.changed_since(self._at) if self._room is not None else None
        if self._room is None or changed is None:
            self._room = Room(view.nodes)
        else:
            self._room.update(view.nodes, changed)
        self._at = view.generation
        return self._room


def _rank(name: str, free: Resources) -> tuple[int, int, str]:
    return (free[CPU], free[MEMORY], name)


def _placed_apart(before: NodeInfo | None, after: NodeInfo | None) -> bool:
    """Whether which pods may run on the node changed, not only what is free on it: it came,
    went, was cordoned or uncordoned (the order of a kind that may run on every node is the order
    of all: a node joining it must be one the kind may run on), or its labels or taints
    changed."""
    if before is None or after is None:
        return before is not after
    return (
        before.unschedulable != after.unschedulable
        or before.labels != after.labels
        or before.taints != after.taints
    )
