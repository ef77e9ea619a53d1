"""The queue tree's rules (`spec.parent`; a queue naming none, or `root`, hangs under the root
queue), Volcano's, and the view of queues every rule that names a queue reads (`QueueLookup`).

Where a queue goes: the parent is a DNS subdomain and not the queue itself; on CREATE and when it
changes, it exists, it is not the queue's own descendant (a cycle, named), the queue and its
deepest descendant stay within `MAX_DEPTH` levels under root, and a parent that has no child
queue yet has no PodGroups (work in a queue that becomes a parent could never be admitted: jobs
go in leaf queues). What it holds: on CREATE, and on an UPDATE that moves the queue or changes
its resources (root excepted), the resources fit the tree as Volcano's rules have them: the
queue's capability per resource at most its nearest ancestor's that caps it, the guarantee (and
deserved) of its parent's children summed at most the parent's, its capability at least its
descendants' largest, and its children's guarantee (and deserved) summed at most its own. These
compare the scheduler's units (millicores, whole units for the rest: Kubernetes'
`MilliValue()`/`Value()`, as Volcano compares them), over the resources Volcano's resource
vector counts. `lineage` walks up from a queue (the rules on Jobs and PodGroups read it too:
work goes in a leaf queue that is Open under Open ancestors).

The same concept at a lower layer: `gangs.queue_tree`, the tree the sharing and the fair order walk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from extender.admission.names import dns_subdomain
from extender.admission.problems import Problem, by_value, field, shown
from extender.api.quantity import units_quantity
from extender.api.resources import Resources
from extender.api.scheduling import Queue

ROOT_QUEUE = "root"  # Volcano's top of the queue hierarchy
MAX_DEPTH = 5  # levels under root, Volcano's webhook default (--max-queue-depth)
LISTED = 5  # names listed in a message before "..."


class QueueLookup(Protocol):
    """The queues and PodGroups the webhook's cache holds."""

    def queue(self, name: str) -> Queue | None: ...

    def pod_groups_in(self, queue: str) -> Sequence[str]:
        """`namespace/name` of the PodGroups whose spec names the queue."""
        ...

    def children(self, name: str) -> Sequence[Queue]:
        """The queues whose `spec.parent` names `name`, by name (for `root`, those naming no
        parent too); never the queue itself."""
        ...


def parent_of(queue: Queue) -> str | None:
    """The queue's parent queue: `root` for one naming none (Volcano's controller writes `root`
    there); None for the root queue itself."""
    if queue.metadata.name == ROOT_QUEUE:
        return None
    return queue.spec.parent or ROOT_QUEUE


@dataclass(frozen=True)
class Lineage:
    """What a walk up from a queue found: its ancestors below root, nearest first; the names
    around a loop when the walk came back to a queue it had passed (the first and last name the
    same); the first ancestor that does not exist."""

    ancestors: tuple[Queue, ...]
    cycle: tuple[str, ...] = ()
    missing: str = ""


def lineage(name: str, parent: str, view: QueueLookup) -> Lineage:
    """The walk up from queue `name`, whose parent is `parent`, to root (a walk that loops stops
    where it loops)."""
    seen, found = [name], list[Queue]()
    while parent and parent != ROOT_QUEUE:
        if parent in seen:
            return Lineage(tuple(found), (*seen[seen.index(parent) :], parent))
        above = view.queue(parent)
        if above is None:
            return Lineage(tuple(found), missing=parent)
        found.append(above)
        seen.append(parent)
        parent = above.spec.parent
    return Lineage(tuple(found))


def count(names: Sequence[str], noun: str) -> str:
    return f"{len(names)} {noun}" + ("" if len(names) == 1 else "s")


def listed(names: Iterable[str]) -> str:
    ordered = sorted(names)
    return ", ".join(ordered[:LISTED]) + (", ..." if len(ordered) > LISTED else "")


def tree_problems(
    queue: Queue, spec: Mapping[str, Any], view: QueueLookup | None, old: Mapping[str, Any] | None
) -> list[Problem]:
    """The rules of the queue tree: `spec.parent` named well; where the queue goes (on CREATE and
    when the parent changes); its resources against its parent's and its children's (on CREATE,
    and when the parent or the resources change). None for root, which the scheduler owns."""
    name, named = queue.metadata.name, queue.spec.parent
    if named and named != ROOT_QUEUE:
        if (reason := dns_subdomain(named)) is not None:
            return [Problem("spec.parent", f"{shown(named)} {reason}")]
        if named == name:
            return [Problem("spec.parent", f"queue {name} cannot be its own parent")]
    parent = parent_of(queue)
    if view is None or parent is None:
        return []
    moved = old is None or (old.get("parent") or ROOT_QUEUE) != parent
    holder, line = None, Lineage(())
    if parent != ROOT_QUEUE:
        holder = view.queue(parent)
        if holder is None:  # (not looked for when it does not change: an orphan stays editable)
            return (
                [Problem("spec.parent", f"queue {shown(parent)} does not exist")] if moved else []
            )
        line = lineage(name, parent, view)
    problems = _placement(queue, holder, line, view) if moved else []
    if line.cycle or line.missing:
        return problems
    changed = (
        old is None or moved or any(by_value(spec, *at) != by_value(old, *at) for at in LEVELS)
    )
    return problems + _tree_resources(queue, holder, line, view) if changed else problems


LEVELS = (("capability",), ("deserved",), ("guarantee", "resource"))


def _placement(
    queue: Queue, parent: Queue | None, line: Lineage, view: QueueLookup
) -> list[Problem]:
    """Where the queue goes: not under its own descendant, within `MAX_DEPTH` levels under root
    with its deepest descendant, and not under a queue that has work and no child queue yet."""
    name = queue.metadata.name
    if line.cycle and line.cycle[0] == name:
        return [
            Problem(
                "spec.parent",
                f"queue {line.cycle[1]} is under queue {name} "
                f"({' -> '.join(reversed(line.cycle[1:]))}, each the parent of the next): "
                "a queue cannot be under its own descendant",
            )
        ]
    if line.cycle:
        return [
            Problem(
                "spec.parent",
                f"the queues above queue {name} form a cycle "
                f"({' -> '.join(line.cycle)}, each under the next)",
            )
        ]
    if line.missing:
        return [
            Problem(
                "spec.parent",
                f"queue {shown(line.missing)}, above queue {line.ancestors[-1].metadata.name}, "
                "does not exist: the queue's depth cannot be known",
            )
        ]
    problems, depth = [], len(line.ancestors) + 1
    if depth > MAX_DEPTH:
        problems.append(
            Problem(
                "spec.parent",
                f"queue {name} would be {depth} levels under root, more than {MAX_DEPTH}",
            )
        )
    else:
        below, deepest = _deepest(name, view)
        if depth + below > MAX_DEPTH:
            problems.append(
                Problem(
                    "spec.parent",
                    f"queue {deepest}, under queue {name}, would be {depth + below} levels "
                    f"under root, more than {MAX_DEPTH}",
                )
            )
    if parent is None:
        return problems
    above = parent.metadata.name
    siblings = [c for c in view.children(above) if c.metadata.name != name]
    groups = view.pod_groups_in(above)
    if not siblings and groups:
        problems.append(
            Problem(
                "spec.parent",
                f"queue {above} has {len(groups)} PodGroup(s) ({listed(groups)}) and no child "
                "queue: a queue with work cannot become a parent (jobs go in leaf queues); move "
                "them to another queue first",
            )
        )
    return problems


def _deepest(name: str, view: QueueLookup) -> tuple[int, str]:
    """How many levels the queue's deepest descendant is below it (0 for a leaf), and its name."""
    seen, level, deepest, current = {name}, 0, name, [name]
    while current:
        following = [
            child.metadata.name
            for above in current
            for child in view.children(above)
            if child.metadata.name not in seen
        ]
        seen.update(following)
        if following:
            level, deepest = level + 1, min(following)
        current = following
    return level, deepest


def _tree_resources(
    queue: Queue, parent: Queue | None, line: Lineage, view: QueueLookup
) -> list[Problem]:
    """Volcano's hierarchy resource rules: the capability at most the nearest ancestor's that caps
    each resource; the guarantee and deserved of the parent's children, this queue's included,
    summed at most the parent's; the capability at least the largest of each child's subtree (the
    nearest capability down each path); the children's guarantee and deserved summed at most this
    queue's. A resource a limit does not name counts as 0 in the sums, as in Volcano."""
    name, problems = queue.metadata.name, []
    capability = _counted(queue.spec.capability)
    if parent is not None:
        for resource, amount in capability.items():
            capped = _nearest_cap(line.ancestors, resource)
            if capped is not None and amount > capped[0]:
                problems.append(
                    Problem(
                        field("spec.capability", resource),
                        f"{_amount(amount, resource)} is more than the capability "
                        f"{_amount(capped[0], resource)} of queue {capped[1]} above it",
                    )
                )
        above = parent.metadata.name
        siblings = [c for c in view.children(above) if c.metadata.name != name]
        problems += _sums(
            parent, [*siblings, queue], f"the child queues of {above}", f"{above}'s", name
        )
    children = [c for c in view.children(name) if c.metadata.name != name]
    if not children:
        return problems
    for resource, amount in capability.items():
        largest, holder = 0, ""
        for child in children:
            found = _subtree_cap(child, resource, view, {name})
            if found[0] > largest:
                largest, holder = found
        if amount < largest:
            problems.append(
                Problem(
                    field("spec.capability", resource),
                    f"{_amount(amount, resource)} is less than the capability "
                    f"{_amount(largest, resource)} of queue {holder} under it",
                )
            )
    problems += _sums(queue, children, "its child queues", "its own", "")
    return problems


def _nearest_cap(ancestors: Sequence[Queue], resource: str) -> tuple[int, str] | None:
    """The capability of `resource` of the nearest ancestor that caps it (0 caps nothing)."""
    for above in ancestors:
        amount = _counted(above.spec.capability).get(resource, 0)
        if amount > 0:
            return amount, above.metadata.name
    return None


def _subtree_cap(queue: Queue, resource: str, view: QueueLookup, seen: set[str]) -> tuple[int, str]:
    """The largest capability of `resource` down the queue's subtree, each path stopping at the
    first queue that caps it, with that queue's name ((0, "") when none does)."""
    amount = _counted(queue.spec.capability).get(resource, 0)
    if amount > 0:
        return amount, queue.metadata.name
    seen.add(queue.metadata.name)
    largest = (0, "")
    for child in view.children(queue.metadata.name):
        if child.metadata.name not in seen:
            found = _subtree_cap(child, resource, view, seen)
            largest = found if found[0] > largest[0] else largest
    return largest


SUMMED: tuple[tuple[str, str, Callable[[Queue], Resources]], ...] = (
    ("spec.guarantee.resource", "guarantee", lambda q: q.spec.guarantee.resource),
    ("spec.deserved", "deserved", lambda q: q.spec.deserved),
)


def _sums(
    holder: Queue, members: Sequence[Queue], who: str, whose: str, named: str
) -> list[Problem]:
    """`members`' guarantee and deserved summed per resource, each at most `holder`'s. The queue
    `named` is listed first as "this queue"."""
    problems = []
    for at, noun, level in SUMMED:
        limit = _counted(level(holder))
        total: dict[str, int] = {}
        for member in members:
            for resource, amount in _counted(level(member)).items():
                total[resource] = total.get(resource, 0) + amount
        for resource, amount in sorted(total.items()):
            if amount <= limit.get(resource, 0):
                continue
            parts = [
                (m.metadata.name, _amount(level(m).get(resource, 0), resource))
                for m in members
                if level(m).get(resource, 0)
            ]
            listed = ", ".join(
                f"{'this queue' if who_ == named else who_} {shown_}" for who_, shown_ in parts
            )
            cap = limit.get(resource)
            than = (
                f"{whose} {noun} {_amount(cap, resource)}"
                if cap
                else f"{whose} {noun}, which names no {resource} (0)"
            )
            problems.append(
                Problem(
                    field(at, resource),
                    f"{who} would have a {noun} of {_amount(amount, resource)} in all "
                    f"({listed}), more than {than}",
                )
            )
    return problems


def _counted(amounts: Resources) -> dict[str, int]:
    """The amounts Volcano's resource vector holds: cpu, memory, pods, ephemeral storage,
    hugepages and resources with a domain (extended ones), not object counts (`count/...`,
    `services`, ...)."""
    return {name: amount for name, amount in amounts.items() if _in_vector(name)}


def _in_vector(name: str) -> bool:
    if name in ("cpu", "memory", "pods", "ephemeral-storage"):
        return True
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    return "/" in name and not name.startswith(("count/", "requests."))


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def _amount(units: int, resource: str) -> str:
    """`units` of `resource` by_value, readably: cpu as `500m` or `2`, byte amounts with the
    largest suffix that divides them (`3Gi`, `1500M`), counts as numbers."""
    if resource == "cpu":
        return units_quantity(units, resource)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, size in (*_BINARY, *_DECIMAL):
            if units >= size and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)
