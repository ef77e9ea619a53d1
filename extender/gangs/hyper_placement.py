"""Placing members kept inside HyperNodes: where a gang that asks for a network topology goes.

`place_within` places the members a plan chose (`Planned`, whose `reach` says what their gang's
`networkTopology` and partitions ask, `gangs.topology`) on what a `Room` leaves: the gang inside
the tightest of its Domains with room for it whole (lowest tier first, then least free cpu: binpack
at the level of HyperNodes, so that whole switches stay free for the gangs that need one), each
partition inside the tightest of its own under that, one with room for all of the partition's
pending members. A soft gang or partition no Domain has room for goes anywhere (within its gang's
Domain, for a partition); a hard one does not go, and `Placed.why` says what it needs and the
largest free. `staying_inside` says where a member without a slot (beyond the plan, or a
replacement) of a gang kept inside a HyperNode may go. First fit inside a Domain is the room's
own: fullest node first, as many alike members on a node as fit. Takes nothing off the room. Pure.

`gangs.placement` places every other gang and hands the ones that ask for a network topology to
`place_within`: what this module reads of its `Room` and `Slot` it declares itself (`FreeRoom`,
`NodeSlot`), so that it imports nothing of that module (no import cycle, not even for types).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol

from extender.api.objects import Pod
from extender.api.quantity import format_units
from extender.api.resources import CPU, Resources
from extender.gangs.members import GangView, Planned
from extender.gangs.topology import Domain, Part, Reach, Within


class FreeRoom(Protocol):
    """What placing inside HyperNodes reads of the room it places on (`gangs.placement.Room`,
    which calls `place_within` for the gangs that ask for a network topology): the free capacity
    per node, the nodes in binpack's order, its first fit, and the free cpu of a group of nodes
    it keeps summed. Declared here, so that this module needs nothing of the module that places
    the other gangs."""

    @property
    def free(self) -> Mapping[str, Resources]: ...

    def allows(self, pod: Pod, name: str) -> bool: ...

    def free_cpu_in(self, nodes: frozenset[str]) -> int: ...

    def in_order(self, names: Iterable[str]) -> list[str]: ...

    def place_run(
        self,
        run: Sequence[Pod],
        taken: dict[str, Resources],
        assignment: dict[str, str] | None = None,
        *,
        used: set[str] | None = None,
    ) -> int: ...


class NodeSlot(Protocol):
    """A member's slot as `staying_inside` reads it (`gangs.placement.Slot`): its node."""

    @property
    def node(self) -> str: ...


@dataclass
class Placed:
    """What `place_within` found: per member uid its node and the nodes of the Domain it
    must stay in (None: anywhere); or why they do not fit (`why`, "" without reasons)."""

    nodes: dict[str, str] = field(default_factory=dict)
    within: dict[str, frozenset[str] | None] = field(default_factory=dict)
    why: str | None = None

    def note(self, assignment: Mapping[str, str], inside: frozenset[str] | None) -> None:
        self.nodes.update(assignment)
        self.within.update(dict.fromkeys(assignment, inside))


def place_within(room: FreeRoom, members: Planned, *, with_reasons: bool = True) -> Placed:
    """`Room.place` for members whose gang asks for a network topology (`members.reach`, see
    `gangs.topology`): the gang inside the tightest of its Domains with room for it whole
    (lowest tier first, then least free cpu), each partition inside the tightest of its
    own within that; a soft gang or partition that no Domain has room for goes anywhere
    (within its gang's Domain, for a partition). Takes nothing off the room."""
    reach = members.reach
    assert reach is not None
    if reach.problem is not None and (reach.gang is None or reach.gang.hard):
        return Placed(why=reach.problem if with_reasons else "")
    gang = reach.gang
    options: list[Domain | None] = []
    if gang is not None:
        options.extend(_tightest(room, gang.domains, members, {}))
    if gang is None or not gang.hard:
        options.append(None)  # (anywhere: a soft gang no Domain has room for whole)
    why = ""
    for domain in options:
        placed = _place_inside(room, members, reach, domain, with_reasons=with_reasons)
        if placed.why is None:
            return placed
        why = why or placed.why
    if not why and gang is not None and with_reasons:  # (no Domain of the gang's has room)
        why = _too_small(room, gang, members)
    return Placed(why=why)


def _place_inside(
    room: FreeRoom, members: Planned, reach: Reach, domain: Domain | None, *, with_reasons: bool
) -> Placed:
    """Every member inside `domain` (None: anywhere), each partition inside one of its own
    Domains under it, one with room for all of the partition's pending members (a plan may
    place only some: the others come to the same Domain). Why not: "" when the members
    outside partitions do not fit in `domain` (the caller says why no Domain would do)."""
    taken: dict[str, Resources] = {}
    placed = Placed()
    inside = domain.nodes if domain is not None else None
    rest = []
    parts: dict[str, tuple[Part, list[Pod]]] = {}
    for pod in members:
        part = reach.part_of(pod.metadata.uid)
        if part is None:
            rest.append(pod)
        else:
            parts.setdefault(part.name, (part, []))[1].append(pod)
    hardest = sorted(parts.values(), key=lambda entry: -sum(p.request[CPU] for p in entry[1]))
    for part, pods in hardest:
        why = _place_part(
            room,
            part,
            Planned(pods),
            inside=inside,
            taken=taken,
            placed=placed,
            with_reasons=with_reasons,
        )
        if why is not None:
            return Placed(why=why)
    if rest:
        ordered = Planned(rest)
        assignment: dict[str, str] = {}
        if _fit_inside(room, ordered, inside, taken, assignment):
            if domain is not None or not with_reasons:
                return Placed(why="")
            return Placed(why=_missing(ordered, inside))
        placed.note(assignment, inside)
    return placed


def _place_part(
    room: FreeRoom,
    part: Part,
    ordered: Planned,
    *,
    inside: frozenset[str] | None,
    taken: dict[str, Resources],
    placed: Placed,
    with_reasons: bool,
) -> str | None:
    """The partition's planned members (`ordered`) inside the tightest of its Domains under
    `inside` with room for all of its pending members, counted in `taken` and noted in
    `placed`; or why not."""
    whole = Planned(part.pending) if len(part.pending) > len(ordered) else ordered
    candidates = [d for d in part.within.domains if inside is None or d.nodes <= inside]
    for option in _tightest(room, candidates, whole, taken):
        if whole is not ordered and _fit_inside(room, whole, option.nodes, dict(taken), {}):
            continue  # (room for the members planned now, not for the whole partition)
        trial, assignment = dict(taken), dict[str, str]()
        if not _fit_inside(room, ordered, option.nodes, trial, assignment):
            taken.update(trial)
            placed.note(assignment, option.nodes)
            return None
    if part.within.hard:
        if not with_reasons:
            return ""
        return f"partition {part.name} {_too_small(room, part.within, whole, taken, inside)}"
    spread: dict[str, str] = {}  # (soft: anywhere inside its gang's)
    if _fit_inside(room, ordered, inside, taken, spread):
        return _missing(ordered, inside) if with_reasons else ""
    placed.note(spread, inside)
    return None


def _fit_inside(
    room: FreeRoom,
    members: Planned,
    inside: frozenset[str] | None,
    taken: dict[str, Resources],
    assignment: dict[str, str],
) -> int:
    """First fit of `members` on the nodes of `inside` (None: every node), fullest first,
    counted in `taken` and noted in `assignment`; how many found no node."""
    if inside is None:
        return sum(room.place_run(members[s:e], taken, assignment) for s, e in members.runs)
    free = room.free
    keys = room.in_order(inside)
    missing = 0
    for start, end in members.runs:
        run = members[start:end]
        pod, request = run[0], run[0].request
        placed = at = 0
        while placed < len(run):
            while at < len(keys):
                name = keys[at]
                left = taken[name] if name in taken else free[name]
                if request.shortfall(left) is None and room.allows(pod, name):
                    break
                at += 1
            if at == len(keys):
                missing += len(run) - placed
                break
            name = keys[at]
            left = taken[name] if name in taken else free[name]
            count = min(len(run) - placed, max(request.times_in(left), 1))
            taken[name] = left - request.times(count)
            for member in run[placed : placed + count]:
                assignment[member.metadata.uid] = name
            placed += count
    return missing


def _tightest(
    room: FreeRoom,
    domains: Sequence[Domain],
    members: Sequence[Pod],
    taken: Mapping[str, Resources],
) -> list[Domain]:
    """Of `domains`, those with the cpu `members` ask for free (after `taken`), lowest tier
    first and then least free cpu first: binpack at the level of HyperNodes."""
    need = sum(pod.request[CPU] for pod in members)
    ranked = []
    for domain in domains:
        free = _free_cpu(room, domain, taken)
        if free >= need:
            ranked.append((domain.tier, free, domain.name, domain))
    return [entry[3] for entry in sorted(ranked, key=lambda e: e[:3])]


def _free_cpu(room: FreeRoom, domain: Domain, taken: Mapping[str, Resources] | None = None) -> int:
    """The free cpu in `domain` (what the room keeps), less what `taken` already used there."""
    found, free, nodes = room.free_cpu_in(domain.nodes), room.free, domain.nodes
    for name, left in (taken or {}).items():
        if name in nodes and name in free:
            found += max(left[CPU], 0) - max(free[name][CPU], 0)
    return found


def _too_small(
    room: FreeRoom,
    within: Within,
    members: Sequence[Pod],
    taken: Mapping[str, Resources] | None = None,
    inside: frozenset[str] | None = None,
) -> str:
    """Why no Domain of `within` (under `inside`, if given) takes the members: what they
    need, and the largest free (or, when that is enough, that it is not in pieces they
    fit in)."""
    need = sum(pod.request[CPU] for pod in members)
    wanted = f"needs {format_units(need, CPU)} cpu inside one {within.kind}"
    domains = [d for d in within.domains if inside is None or d.nodes <= inside]
    if not domains:
        return f"{wanted}; there is none" + ("" if inside is None else " inside its gang's")
    largest = max(domains, key=lambda d: (_free_cpu(room, d, taken), d.name))
    free = _free_cpu(room, largest, taken)
    shown = format_units(free, CPU)
    if free >= need:
        return f"{wanted}; {largest.name} has {shown} cpu free, not in pieces its members fit"
    return f"{wanted}; the largest free is {shown} cpu in {largest.name}"


def _missing(members: Planned, inside: frozenset[str] | None) -> str:
    """Why members placed without a Domain of their own found no node."""
    return f"{len(members)} members cannot be placed: Insufficient {CPU}" + (
        "" if inside is None else " in their HyperNode"
    )


def staying_inside(
    gang: GangView, pod: Pod, slots: Mapping[str, NodeSlot] | None = None
) -> frozenset[str] | None:
    """The nodes a member without a slot of a gang kept inside a HyperNode (a hard network
    topology, its gang's or its partition's) may go to; None when it is free to go anywhere.

    Gang-wide: the largest Domain its gang may use that contains every node its gang's slots and
    placed members are on (its Domains all contain the placed ones). Its partition's, when hard
    and some member of the partition has a slot or runs: the largest of the partition's
    Domains inside that which contains where they are. Both bind when both are asked."""
    reach = gang.reach
    if reach is None:
        return None
    slots = slots or {}
    inside: frozenset[str] | None = None
    within = reach.gang
    if within is not None and within.hard and (slots or gang.staying):
        used = {slot.node for slot in slots.values()}
        inside = _largest(within.domains, used, None)
    part = reach.part_of(pod.metadata.uid)
    if part is not None and part.within.hard:
        used = {slot.node for uid, slot in slots.items() if uid in part.uids}
        if used or part.anchored:
            own = _largest(part.within.domains, used, inside)
            inside = own if inside is None else own & inside
    return inside


def _largest(
    domains: Sequence[Domain], used: AbstractSet[str], under: frozenset[str] | None
) -> frozenset[str]:
    """The nodes of the largest of `domains` (under `under`) that contain every node of `used`; the
    empty set when none does (nowhere is allowed)."""
    fitting = [d for d in domains if used <= d.nodes and (under is None or d.nodes <= under)]
    if not fitting:
        return frozenset()
    return max(fitting, key=lambda d: (d.tier, len(d.nodes), d.name)).nodes
