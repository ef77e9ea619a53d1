"""Queues as fairness sees them: what each holds, asks for and deserves, from the cluster state.

`account` walks the gangs once: a gang counts in the queue its PodGroup names; its placed members
and the unconsumed slots of its admission are *allocated*, its pending members are asked for. A
gang naming a queue that does not exist counts nowhere (it is refused until the queue appears).
The `default` queue exists implicitly until it is created, so a cluster without Queue objects
behaves as one open queue. Deserved shares are water-filled over the schedulable nodes' capacity.
Pods outside PodGroups belong to no queue: they use capacity, no queue is charged for it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.api.quantity import format_units
from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import DEFAULT_QUEUE, Queue, default_queue
from extender.cache.state import ClusterState
from extender.gangs.fairness import Claim, overused, share, water_fill
from extender.gangs.members import FollowsGangs, view_gang
from extender.gangs.refusals import Cause, Rejection


@dataclass
class QueueView:
    queue: Queue
    allocated: Resources = EMPTY  # placed + the capacity admissions hold for pending members
    placed: Resources = EMPTY  # what its members bound to nodes request
    request: Resources = EMPTY  # allocated + what its pending members ask for
    deserved: Resources = EMPTY

    @property
    def name(self) -> str:
        return self.queue.metadata.name

    @property
    def share(self) -> float:
        return share(self.allocated, self.deserved)

    @property
    def overused(self) -> bool:
        return overused(self.allocated, self.deserved)

    def capability_refusal(
        self, gang: str, extra: Resources, allocated: Resources
    ) -> Rejection | None:
        """Why `extra` more than `allocated` would take the queue over its capability, if so."""
        capability = self.queue.spec.capability
        for resource, amount in extra.items():
            if resource in capability and allocated[resource] + amount > capability[resource]:
                limit = format_units(capability[resource], resource)
                message = (
                    f"gang {gang}: queue {self.name} would hold more {resource} than its "
                    f"capability ({limit}); it waits until the queue's own work frees some"
                )
                return Rejection(Cause.QUEUE_CAPABILITY, message)
        return None


class QueueTally(FollowsGangs):
    """Per queue, what its gangs' placed members hold and pending members ask for."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: dict[str, tuple[str, Resources, Resources]] = {}  # gang: queue, placed, asked
        self.placed: dict[str, Resources] = {}
        self.asked: dict[str, Resources] = {}

    def _start_over(self) -> None:
        self._parts, self.placed, self.asked = {}, {}, {}

    def _changed(self, state: ClusterState, key: str) -> None:
        old = self._parts.pop(key, None)
        if old is not None:
            self.placed[old[0]] = self.placed[old[0]] - old[1]
            self.asked[old[0]] = self.asked[old[0]] - old[2]
        if key in state.pod_groups:
            gang = view_gang(state, key)
            self._parts[key] = (gang.queue, gang.allocated, gang.demand)
            self.placed[gang.queue] = self.placed.get(gang.queue, EMPTY) + gang.allocated
            self.asked[gang.queue] = self.asked.get(gang.queue, EMPTY) + gang.demand


def account(
    state: ClusterState, reserved: Mapping[str, Resources], tally: QueueTally | None = None
) -> dict[str, QueueView]:
    """Every queue's allocation, request and deserved share now; `reserved` is per gang key what
    its admission still holds; `tally` the per-queue sums kept from the last call, if any."""
    queues = dict(state.queues)
    queues.setdefault(DEFAULT_QUEUE, default_queue())
    views = {name: QueueView(queue) for name, queue in queues.items()}
    tally = tally or QueueTally()
    tally.catch_up(state)
    allocated = dict(tally.placed)
    asked = dict(tally.asked)
    for key, slots in reserved.items():  # pending members' requests, held for them
        group = state.pod_groups.get(key)
        if group is not None:
            allocated[group.queue] = allocated.get(group.queue, EMPTY) + slots
            asked[group.queue] = asked.get(group.queue, EMPTY) - slots
    claims = []
    for name, view in views.items():
        view.allocated = allocated.get(name, EMPTY)
        view.placed = tally.placed.get(name, EMPTY)
        view.request = view.allocated + asked.get(name, EMPTY)
        spec = view.queue.spec
        claims.append(
            Claim(
                name,
                spec.weight,
                view.request,
                spec.capability,
                spec.guarantee.resource,
                spec.deserved,
            )
        )
    for name, deserved in water_fill(claims, state.capacity()).items():
        views[name].deserved = deserved
    return views
