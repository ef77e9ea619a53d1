"""Queues as fairness sees them: what each holds, asks for and deserves, from the cluster state.

`account` walks the gangs once: a gang counts in the queue its PodGroup names; its placed members
and the unconsumed slots of its admission are *allocated*, its pending members are asked for. A
gang naming a queue that does not exist counts nowhere (it is refused until the queue appears).
The `default` queue exists implicitly until it is created, so a cluster without Queue objects
behaves as one open queue. Deserved shares are water-filled over the schedulable nodes' capacity.
Pods outside PodGroups belong to no queue: they use capacity, no queue is charged for it. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import DEFAULT_QUEUE, Queue, default_queue
from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.framework.fairness import Claim, overused, share, water_fill


@dataclass
class QueueView:
    queue: Queue
    allocated: Resources = EMPTY
    request: Resources = EMPTY  # allocated + what its pending members ask for
    deserved: Resources = EMPTY
    phases: Counter[str] = field(default_factory=Counter)  # its PodGroups by status phase

    @property
    def name(self) -> str:
        return self.queue.metadata.name

    @property
    def share(self) -> float:
        return share(self.allocated, self.deserved)

    @property
    def overused(self) -> bool:
        return overused(self.allocated, self.deserved)

    def capped(self, extra: Resources, allocated: Resources | None = None) -> str | None:
        """The first resource of which `extra` more than `allocated` (by default what it holds
        now) would take the queue over its capability."""
        held = self.allocated if allocated is None else allocated
        capability = self.queue.spec.capability
        for resource, amount in extra.items():
            if resource in capability and held[resource] + amount > capability[resource]:
                return resource
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
    asked: dict[str, Resources] = {}
    for key, group in state.pod_groups.items():
        name = group.spec.queue or DEFAULT_QUEUE
        if name not in views:
            continue
        views[name].phases[group.status.phase or "Pending"] += 1
        slots = reserved.get(key, EMPTY)
        held, wanted = slots, EMPTY - slots  # slots are pending members' requests held
        for uid in state.members.get(key, ()):
            pod = state.pods.get(uid)
            if pod is None or pod.finished:
                continue
            if state.placed_on(uid) is not None:
                held = held + pod.request
            elif pod.metadata.deletion_timestamp is None:
                wanted = wanted + pod.request
        allocated[name] = allocated.get(name, EMPTY) + held
        asked[name] = asked.get(name, EMPTY) + wanted
    claims = []
    for name, view in views.items():
        view.allocated = allocated.get(name, EMPTY)
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
