"""Where a starving gang drains toward, and what it takes now.

A gang that waited past its starvation limit and does not fit aims at the nodes it would fit on
were they empty (those it aimed at before first, then those with most free), placing its members
first fit on their allocatable; it takes what is free there now off the room, so freed capacity
accumulates for it walk after walk (`gangs.order` calls it at the gang's turn). A gang kept inside
one HyperNode (hard network topology) aims inside one: the one it aimed at before, else the one
with most free cpu of those large enough for it. Pure.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

from extender.api.resources import CPU, EMPTY, MEMORY, Resources
from extender.gangs.members import GangView, Planned
from extender.gangs.placement import Room, members_to_plan


def drain(
    gang: GangView, left: Room, previous: Mapping[str, Resources] | None
) -> tuple[dict[str, Resources], dict[str, Resources]]:
    """The free capacity to take for a starving gang that does not fit yet: on the nodes it
    would fit on were they empty (those that have most free first, the previous targets kept),
    what is free now in `left` up to what its members need there. Freed capacity then
    accumulates for it. Returns (what it aims for per node, what it takes now)."""
    members, _ = members_to_plan(gang)
    nodes, free = left.nodes, left.free  # the schedulable nodes, after what is claimed
    inside = _aim(members, left, previous)
    if inside is not None:
        previous = {n: amount for n, amount in (previous or {}).items() if n in inside}
        free = {n: amount for n, amount in free.items() if n in inside}
    kept = set(previous or ())
    first = sorted(
        (name for name in kept if name in free),
        key=lambda name: (-free[name][CPU], -free[name][MEMORY], name),
    )
    # The previous targets, then the others from the most free: listed only as far as some
    # member looked (most find a node among the first few), not sorted whole per turn.
    rest = (n for n in left.most_free() if n not in kept and (inside is None or n in inside))
    ranked = _Lazy(itertools.chain(first, rest))
    target: dict[str, Resources] = {}
    for start, end in members.runs:  # largest first, alike members together
        # First fit member by member, from the first node each time, would pass over the nodes
        # that did not take the member before (their targets only grew): it carries on from the
        # node that took it, which takes as many as fit.
        pod, wanted, index = members[start], end - start, 0
        request = pod.request
        while wanted and (name := ranked.at(index)) is not None:
            if left.allows(pod, name):
                have = target.get(name, EMPTY)
                count = min(wanted, request.times_in(nodes[name].allocatable - have))
                if count:
                    target[name] = have + request.times(count)
                    wanted -= count
            index += 1
    taken: dict[str, Resources] = {}
    for name, amount in target.items():
        keep = amount.within(free[name])
        if keep:
            taken[name] = keep
    return target, taken


def _aim(
    members: Planned, left: Room, previous: Mapping[str, Resources] | None
) -> frozenset[str] | None:
    """The nodes of the HyperNode a gang kept inside one drains inside (None: it is not kept
    inside one)."""
    within = members.reach.gang if members.reach is not None else None
    if within is None or not within.hard or not within.domains:
        return None
    need = sum(pod.request[CPU] for pod in members)
    nodes, free = left.nodes, left.free
    large = [
        d
        for d in within.domains
        if sum(nodes[n].allocatable[CPU] for n in d.nodes if n in nodes) >= need
    ]
    aimed = set(previous or ())
    before = next((d for d in large if aimed and aimed <= d.nodes), None)
    if before is not None:
        return before.nodes
    if not large:
        return within.domains[0].nodes
    most = max(large, key=lambda d: (sum(free[n][CPU] for n in d.nodes if n in free), d.name))
    return most.nodes


class _Lazy:
    """An iterator's items, pulled only as far as some reader went."""

    __slots__ = ("_items", "_source")

    def __init__(self, source: Iterator[str]) -> None:
        self._items: list[str] = []
        self._source = source

    def at(self, index: int) -> str | None:
        """The item at `index` (None past the last)."""
        items = self._items
        while index >= len(items):
            item = next(self._source, None)
            if item is None:
                return None
            items.append(item)
        return items[index]
