"""Queues as fairness sees them: what each is allocated, asks for and deserves, from the cluster
state.

`account` walks the gangs once: a gang counts in the queue its PodGroup names; its placed members
and the unconsumed slots of its admission are *allocated*, its pending members are asked for. A
gang naming a queue that does not exist counts nowhere (it is refused until the queue appears).
The `default` queue exists implicitly until it is created, so a cluster without Queue objects
behaves as one open queue. Deserved shares are water-filled over the schedulable nodes' capacity.
Pods outside PodGroups belong to no queue: they use capacity, no queue is charged for it.

Queues form a tree (`gangs.queue_tree`): a parent's figures are its own plus its children's, and
each level shares what its parent deserves (`fairness.water_fill_tree`); a `root` Queue, when one
exists, is allocated everything and deserves the cluster. A flat tree is shared exactly as
before, in one fill. A gang may take neither its queue nor any queue above it past its capability.
Pure.

The same concept at a higher layer: `admission.queues`, the rules a Queue is admitted by.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

from extender.api.quantity import format_units
from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import DEFAULT_QUEUE, ROOT, Queue, default_queue
from extender.cache.state import ClusterState
from extender.gangs.fairness import Claim, overused, share, water_fill, water_fill_tree
from extender.gangs.members import FollowsGangs, view_gang
from extender.gangs.queue_tree import QueueTree
from extender.gangs.refusals import Cause, Rejection


@dataclass
class QueueView:
    queue: Queue
    allocated: Resources = EMPTY  # placed + the capacity admissions reserve for pending members
    placed: Resources = EMPTY  # what its members bound to nodes request
    request: Resources = EMPTY  # allocated + what its pending members ask for
    deserved: Resources = EMPTY
    path: str = ""  # root/ml/team-a
    parent: QueueView | None = None  # None: a top-level queue (or root itself)
    leaf: bool = True  # no queue names it as parent: gangs may go in it

    @property
    def name(self) -> str:
        return self.queue.metadata.name

    def lineage(self) -> Iterator[QueueView]:
        """The queue, then each queue above it (a `root` Queue left out)."""
        at: QueueView | None = self
        while at is not None and at.name != ROOT:
            yield at
            at = at.parent

    @cached_property
    def capped(self) -> bool:
        """The queue or one above it names a capability (a gang may be refused for it). Asked at
        every turn of a walk: worked out once per view (the tree is linked by then)."""
        return any(view.queue.spec.capability for view in self.lineage())

    @property
    def closed_by(self) -> QueueView | None:
        """The queue (itself or one above it) whose state admits nothing new, if any."""
        return next((view for view in self.lineage() if not view.queue.open), None)

    @property
    def share(self) -> float:
        return share(self.allocated, self.deserved)

    @property
    def overused(self) -> bool:
        return overused(self.allocated, self.deserved)

    def capability_refusal(
        self, gang: str, extra: Resources, allocated: Mapping[str, Resources] | None = None
    ) -> Rejection | None:
        """Why `extra` more would take the queue, or one above it, over its capability, if so;
        `allocated` is per queue what it is allocated (each view's own when None)."""
        for view in self.lineage():
            capability = view.queue.spec.capability
            if not capability:
                continue
            has = view.allocated if allocated is None else allocated[view.name]
            for resource, amount in extra.items():
                if resource in capability and has[resource] + amount > capability[resource]:
                    limit = format_units(capability[resource], resource)
                    whose = (
                        f"queue {self.name}"
                        if view is self
                        else f"queue {self.name}'s ancestor {view.path}"
                    )
                    message = (
                        f"gang {gang}: {whose} would have more {resource} than its capability "
                        f"({limit}); it waits until work under that queue frees some"
                    )
                    return Rejection(Cause.QUEUE_CAPABILITY, message)
        return None


def capped_above(queues: Mapping[str, Queue], name: str) -> bool:
    """Whether queue `name` or one above it names a capability, read from the Queues alone (a
    question asked per member bound beyond a plan, far cheaper than `account`)."""
    seen: set[str] = set()
    at = name
    while at and at != ROOT and at not in seen:
        seen.add(at)
        queue = queues.get(at)
        if queue is None:
            return False
        if queue.spec.capability:
            return True
        at = queue.spec.parent
    return False


class QueueTally(FollowsGangs):
    """Per queue, what its gangs' placed members use and pending members ask for."""

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
    its admission still reserves; `tally` the per-queue sums kept from the last call, if any."""
    queues = dict(state.queues)
    queues.setdefault(DEFAULT_QUEUE, default_queue())
    views = {name: QueueView(queue) for name, queue in queues.items()}
    tally = tally or QueueTally()
    tally.catch_up(state)
    allocated = dict(tally.placed)
    asked = dict(tally.asked)
    for key, slots in reserved.items():  # pending members' requests, reserved for them
        group = state.pod_groups.get(key)
        if group is not None:
            allocated[group.queue] = allocated.get(group.queue, EMPTY) + slots
            asked[group.queue] = asked.get(group.queue, EMPTY) - slots
    tree = QueueTree.of(queues)
    claims = {}
    for name, view in views.items():
        view.allocated = allocated.get(name, EMPTY)
        view.placed = tally.placed.get(name, EMPTY)
        # (gangs waiting in a queue with children are never admitted: they ask for nothing)
        view.request = view.allocated
        if tree.is_leaf(name):
            view.request = view.request + asked.get(name, EMPTY)
        spec = view.queue.spec
        claims[name] = Claim(
            name,
            spec.weight,
            view.request,
            spec.capability,
            spec.guarantee.resource,
            spec.deserved,
        )
    if tree.flat and ROOT not in views:
        for name, deserved in water_fill(list(claims.values()), state.capacity()).items():
            views[name].deserved = deserved
            views[name].path = f"{ROOT}/{name}"
        return views
    _as_tree(views, claims, tree, state.capacity())
    return views


def _as_tree(
    views: Mapping[str, QueueView], claims: Mapping[str, Claim], tree: QueueTree, total: Resources
) -> None:
    """Link each view to its parent, roll each parent's figures up from its children and share
    every level (the tree's order puts parents before children)."""
    for name, deserved in water_fill_tree(claims, tree.children, ROOT, total).items():
        views[name].deserved = deserved
    order = list(tree.below(ROOT))
    for name in order:
        view = views[name]
        view.path = tree.path(name)
        view.leaf = tree.is_leaf(name)
        view.parent = views.get(tree.parents[name])  # (root: its Queue's view, if there is one)
    for name in reversed(order):  # children before parents
        view = views[name]
        above = view.parent
        if above is not None:
            above.allocated = above.allocated + view.allocated
            above.placed = above.placed + view.placed
            above.request = above.request + view.request
    if ROOT in views:
        root = views[ROOT]
        root.path, root.leaf, root.deserved = ROOT, False, total
