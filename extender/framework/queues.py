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
from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.framework.fairness import Claim, overused, share, water_fill
from extender.framework.members import Rejection, view_gang


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
                return Rejection("QueueCapability", message)
        return None


def cluster_total(nodes: Mapping[str, NodeInfo]) -> Resources:
    """What the schedulable nodes offer together."""
    return sum((info.allocatable for info in nodes.values() if not info.unschedulable), EMPTY)


def account(
    state: ClusterState,
    nodes: Mapping[str, NodeInfo],
    reserved: Mapping[str, Resources],
) -> dict[str, QueueView]:
    """Every queue's allocation, request and deserved share now; `reserved` is per gang key what
    its admission still holds."""
    queues = dict(state.queues)
    queues.setdefault(DEFAULT_QUEUE, default_queue())
    views = {name: QueueView(queue) for name, queue in queues.items()}
    allocated: dict[str, Resources] = {}
    placed: dict[str, Resources] = {}
    asked: dict[str, Resources] = {}
    for key in state.pod_groups:
        gang = view_gang(state, key)
        if gang.queue not in views:
            continue
        slots = reserved.get(key, EMPTY)  # pending members' requests, held for them
        allocated[gang.queue] = allocated.get(gang.queue, EMPTY) + gang.allocated + slots
        placed[gang.queue] = placed.get(gang.queue, EMPTY) + gang.allocated
        asked[gang.queue] = asked.get(gang.queue, EMPTY) + gang.demand - slots
    claims = []
    for name, view in views.items():
        view.allocated = allocated.get(name, EMPTY)
        view.placed = placed.get(name, EMPTY)
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
    for name, deserved in water_fill(claims, cluster_total(nodes)).items():
        views[name].deserved = deserved
    return views
