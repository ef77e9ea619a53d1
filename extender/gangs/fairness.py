"""Fair shares: what each queue deserves of the cluster, and how far a queue or a job is into it.

`water_fill` is Volcano's proportion rule, computed exactly per resource instead of by repeated
rounds: each queue gets `weight / Σ weight` of what is left, never more than its capability nor
than it asks for (allocated + pending), never less than its guarantee; what a capped queue cannot
use flows to the others. A queue whose spec names `deserved` for a resource gets that (capped at
its capability) before the rest is shared. Guarantees that together exceed the cluster shrink in
proportion. So Σ deserved ≤ cluster and deserved ≤ capability always.

`water_fill_tree` does the same at every level of a queue tree: the top-level queues share the
cluster, and each parent's deserved is shared among its children the same way. A parent stands
at its level for its whole subtree: it asks for what its children could use (each's request
within its own capability, at least its guarantee), and it is guaranteed at least the sum of its
children's guarantees. So the children of a parent that is saturated deserve, together, exactly
what it deserves; a child never deserves more than its capability or its parent's deserved.

`share` is how far a queue is into what it deserves (max over resources of allocated / deserved);
`dominant_share` is DRF's job share (max over resources of allocated / cluster total). The pod
count is not a shared resource and is left out of both. Pure arithmetic, integer units in and out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from extender.api.resources import EMPTY, PODS, Resources

UNCAPPED = 2**62  # larger than any cluster's amount of any resource


@dataclass(frozen=True)
class Claim:
    """One queue's side of the sharing."""

    name: str
    weight: int = 1
    request: Resources = EMPTY  # what it is allocated plus what its waiting gangs ask for
    capability: Resources = EMPTY  # resources named here are capped
    guarantee: Resources = EMPTY
    deserved: Resources = EMPTY  # set by the user: taken as is for the resources it names


def water_fill(claims: Sequence[Claim], total: Resources) -> dict[str, Resources]:
    """What each queue deserves of `total` (see the module docstring). Remembered for the last
    inputs seen: a bind moves a queue's request from pending to allocated without changing it,
    so the fill is the same until gangs come or go while the fair order is walked after every
    bind."""
    return dict(_water_fill(tuple(claims), total))


@lru_cache(maxsize=64)
def _water_fill(claims: tuple[Claim, ...], total: Resources) -> dict[str, Resources]:
    amounts: dict[str, dict[str, int]] = {claim.name: {} for claim in claims}
    for resource in total:
        if resource == PODS:
            continue
        for name, amount in _fill_one(claims, resource, total[resource]).items():
            amounts[name][resource] = amount
    return {name: Resources(values) for name, values in amounts.items()}


def _cap(claim: Claim, resource: str) -> int:
    return claim.capability.get(resource, UNCAPPED)


def _fill_one(claims: Sequence[Claim], resource: str, total: int) -> dict[str, int]:
    result: dict[str, int] = {}
    left = total
    fixed = [c for c in claims if resource in c.deserved]
    for claim in sorted(fixed, key=lambda c: c.name):
        result[claim.name] = min(claim.deserved[resource], _cap(claim, resource), left)
        left -= result[claim.name]
    shared = [c for c in claims if resource not in c.deserved]
    if not shared:
        return result
    floors = {c.name: min(c.guarantee[resource], _cap(c, resource)) for c in shared}
    promised = sum(floors.values())
    if promised > left:  # guarantees beyond the cluster: shrink them in proportion
        floors = {name: floor * left // promised for name, floor in floors.items()}
    ceilings = {
        c.name: max(floors[c.name], min(_cap(c, resource), c.request[resource])) for c in shared
    }
    if sum(ceilings.values()) <= left:
        result.update(ceilings)
        return result

    def filled(level: float) -> dict[str, int]:
        return {
            c.name: min(ceilings[c.name], max(floors[c.name], int(level * c.weight)))
            for c in shared
        }

    low, high = 0.0, max(ceilings[c.name] / c.weight for c in shared) + 1.0
    heaviest = max(c.weight for c in shared)
    while (high - low) * heaviest > 1e-3:  # the largest level whose fill fits in what is left
        middle = (low + high) / 2  # (finer than 1/1000 of a unit changes no integer amount)
        if not low < middle < high:
            # No float lies between: at terabytes of memory the spacing of floats is coarser
            # than 1/1000 of a byte, and without this the loop never ended.
            break
        if sum(filled(middle).values()) <= left:
            low = middle
        else:
            high = middle
    result.update(filled(low))
    return result


def water_fill_tree(
    claims: Mapping[str, Claim], children: Mapping[str, Sequence[str]], top: str, total: Resources
) -> dict[str, Resources]:
    """What each queue under `top` deserves of `total` (see the module docstring); `children`
    lists each parent's queues, `claims` has every queue's own."""
    rolled: dict[str, Claim] = {}

    def roll(name: str) -> Claim:
        own = claims[name]
        below = [roll(child) for child in children.get(name, ())]
        if below:
            usable, guaranteed = dict(own.request), dict[str, int]()
            for claim in below:
                for resource in {*claim.request, *claim.guarantee}:
                    most = max(claim.request.get(resource, 0), claim.guarantee.get(resource, 0))
                    usable[resource] = usable.get(resource, 0) + min(most, _cap(claim, resource))
                for resource, amount in claim.guarantee.items():
                    guaranteed[resource] = guaranteed.get(resource, 0) + amount
            for resource, amount in own.guarantee.items():
                guaranteed[resource] = max(guaranteed.get(resource, 0), amount)
            own = Claim(
                name,
                own.weight,
                Resources(usable),
                own.capability,
                Resources(guaranteed),
                own.deserved,
            )
        rolled[name] = own
        return own

    for child in children.get(top, ()):
        roll(child)
    deserved: dict[str, Resources] = {}
    shared = [(top, total)]
    while shared:
        parent, amount = shared.pop()
        names = children.get(parent, ())
        for name, got in water_fill([rolled[n] for n in names], amount).items():
            deserved[name] = got
            if name in children:
                shared.append((name, got))
    return deserved


def share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """How far into its deserved share a queue is: 0 empty, 1 exactly at it, above 1 overused.
    Holding any of a resource it deserves none of counts as fully used (1)."""
    worst = 0.0
    for resource, amount in allocated.items():
        if resource == PODS or amount <= 0:
            continue
        limit = deserved.get(resource, 0)
        worst = max(worst, amount / limit if limit > 0 else 1.0)
    return worst


def dominant_share(allocated: Mapping[str, int], total: Mapping[str, int]) -> float:
    """DRF: the largest fraction of any cluster resource the job is allocated."""
    worst = 0.0
    for resource, amount in allocated.items():
        limit = total.get(resource, 0)
        if resource != PODS and limit > 0:
            worst = max(worst, amount / limit)
    return worst


def overused(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> bool:
    """Holding more than it deserves of some resource (what makes a queue reclaimable from)."""
    return any(
        amount > deserved.get(resource, 0)
        for resource, amount in allocated.items()
        if resource != PODS and amount > 0
    )
