"""Queue rules (`scheduling.volcano.sh/v1beta1`, cluster-scoped), Volcano's, and the view of
queues every rule that names a queue reads.

CREATE and UPDATE: the spec parses (weight 1..65535, priority not negative, quantities), amounts
are not negative and whole for resources counted whole (extended ones, pods), and per resource
guarantee <= deserved <= capability, a guaranteed resource deserved too (a resource capability
does not name is not capped); `status.state`, when given, is one Kubernetes operators expect
(Open, Closed, Closing, Unknown); `dequeueStrategy` and `type` as Volcano's schema has them; the
hierarchy annotations have a weight above 0 per queue of the path; the root queue's resources do
not change.

The queue tree (`spec.parent`; a queue naming none, or `root`, hangs under the root queue). The
parent is a DNS subdomain and not the queue itself; on CREATE and when it changes, it exists, it
is not the queue's own descendant (a cycle, named), the queue and its deepest descendant stay
within `MAX_DEPTH` levels under root, and a parent that has no child queue yet has no PodGroups
(work in a queue that becomes a parent could never be admitted: jobs go in leaf queues). On
CREATE, and on an UPDATE that moves the queue or changes its resources (root excepted), the
resources fit the tree as Volcano's rules have them: the queue's capability per resource at most
its nearest ancestor's that caps it, the guarantee (and deserved) of its parent's children summed
at most the parent's, its capability at least its descendants' largest, and its children's
guarantee (and deserved) summed at most its own. These compare the scheduler's units (millicores,
whole units for the rest: Kubernetes' `MilliValue()`/`Value()`, as Volcano compares them), over
the resources Volcano's resource vector counts. Work (a Job, a PodGroup) goes in a leaf queue that
is Open under Open ancestors (`work_queue_problems`).

DELETE: the `default` queue stays (PodGroups without a queue land there), the `root` queue stays,
and so do a queue that PodGroups still name (deleting it would strand them) and one with child
queues (they would hang under nothing). Unlike Volcano, a queue whose state is empty counts as
Open, as the scheduler counts it, and so does `default` before it exists (the scheduler counts it
as there and creates it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from extender.admission.containers import whole
from extender.admission.names import MAX_SUBDOMAIN, dns_subdomain
from extender.admission.problems import INT32, Problem, field, parse, shown
from extender.api.quantity import parse_quantity, units_quantity
from extender.api.resources import Resources
from extender.api.scheduling import DEFAULT_QUEUE, Queue

STATES = ("Open", "Closed", "Closing", "Unknown")
MAX_WEIGHT = 65535
ROOT_QUEUE = "root"  # Volcano's top of the queue hierarchy
MAX_DEPTH = 5  # levels under root, Volcano's webhook default (--max-queue-depth)
LISTED = 5  # names listed in a message before "..."
DEQUEUE_STRATEGIES = ("fifo", "traverse")
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
# Counted in whole units besides extended resources (Kubernetes' integer resources).
WHOLE_RESOURCES = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)


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


def queue_problems(
    name: str, queue: Queue | None, ancestors: Sequence[Queue] = ()
) -> list[Problem]:
    """Why `name` cannot take new work: it does not exist, or it or a queue above it is not Open
    (Volcano's controller closes a closing queue's children with it; Lahar's scheduler counts
    them closed)."""
    if queue is None and name == DEFAULT_QUEUE:
        return []  # the scheduler creates it, and counts it as there meanwhile
    if queue is None:
        return [Problem("", f"queue {shown(name)} does not exist")]
    if not queue.open:
        return [Problem("", f"queue {shown(name)} is {queue.status.state}: it takes no new work")]
    for above in ancestors:
        if not above.open:
            return [
                Problem(
                    "",
                    f"queue {shown(name)} is under queue {above.metadata.name}, which is "
                    f"{above.status.state}: it takes no new work",
                )
            ]
    return []


def work_queue_problems(name: str, view: QueueLookup) -> list[Problem]:
    """Why a Job or a PodGroup cannot go into queue `name`: `queue_problems` (its ancestors
    included), and child queues under it (jobs go in leaf queues, as Volcano's Job rules have it;
    Lahar's scheduler admits no gang in a queue with children)."""
    found = view.queue(name)
    parent = None if found is None else parent_of(found)
    above = () if parent is None else lineage(name, parent, view).ancestors
    problems = queue_problems(name, found, above)
    children = [child.metadata.name for child in view.children(name)]
    if children:
        problems.append(
            Problem(
                "",
                f"queue {name} has {_count(children, 'child queue')} ({_listed(children)}): "
                "jobs go in leaf queues",
            )
        )
    return problems


def _count(names: Sequence[str], noun: str) -> str:
    return f"{len(names)} {noun}" + ("" if len(names) == 1 else "s")


def _listed(names: Iterable[str]) -> str:
    ordered = sorted(names)
    return ", ".join(ordered[:LISTED]) + (", ..." if len(ordered) > LISTED else "")


def parse_queue(obj: Mapping[str, Any] | None) -> tuple[Queue | None, list[Problem]]:
    return parse(Queue, obj, "Queue", ("metadata", "spec", "status"))


def check_queue(
    obj: Mapping[str, Any] | None,
    view: QueueLookup | None = None,
    old: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """CREATE (`old` None) and UPDATE. `view` holds the other queues: without it, the rules of
    the queue tree beyond the parent's name are not checked."""
    queue, problems = parse_queue(obj)
    if queue is None or obj is None:
        return problems
    spec, raw = queue.spec, _mapping(obj.get("spec"))
    if spec.weight > MAX_WEIGHT:
        problems.append(Problem("spec.weight", f"must be at most {MAX_WEIGHT}, got {spec.weight}"))
    if not 0 <= spec.priority <= INT32:
        problems.append(
            Problem("spec.priority", f"must be from 0 to {INT32}, got {shown(spec.priority)}")
        )
    state = queue.status.state
    if state and state not in STATES:
        problems.append(
            Problem("status.state", f"must be one of {', '.join(STATES)}, got {shown(state)}")
        )
    problems += _schema_fields(raw)
    problems += _resources(raw)
    problems += _hierarchy(queue.metadata.annotations)
    problems += _tree(queue, raw, view, None if old is None else _mapping(old.get("spec")))
    if old is not None and queue.metadata.name == ROOT_QUEUE:
        problems += _root_unchanged(raw, _mapping(old.get("spec")))
    return problems


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _schema_fields(spec: Mapping[str, Any]) -> list[Problem]:
    """Fields of Volcano's Queue that Lahar's model does not carry, as Volcano's schema has them."""
    problems = []
    strategy = spec.get("dequeueStrategy")
    if strategy is not None and strategy not in DEQUEUE_STRATEGIES:
        problems.append(
            Problem(
                "spec.dequeueStrategy",
                f"must be one of {', '.join(DEQUEUE_STRATEGIES)}, got {shown(strategy)}",
            )
        )
    kind = spec.get("type")
    if kind is not None and (not isinstance(kind, str) or len(kind) > MAX_SUBDOMAIN):
        problems.append(
            Problem("spec.type", f"must be a string of at most {MAX_SUBDOMAIN} characters")
        )
    return problems


def _amounts(spec: Mapping[str, Any], *path: str) -> dict[str, tuple[Decimal, Any]]:
    """A level's exact amounts (the model's are rounded to the scheduler's units), each with the
    quantity as written; the model has read them, so each parses."""
    listed: Any = spec
    for key in path:
        listed = _mapping(listed).get(key)
    return {name: (parse_quantity(q), q) for name, q in _mapping(listed).items()}


def _resources(spec: Mapping[str, Any]) -> list[Problem]:
    """Each amount not negative, whole for resources counted whole (extended ones, pods); per
    resource guarantee <= deserved <= capability, a guaranteed resource deserved too (a resource
    not in capability is not capped)."""
    levels = {
        "spec.capability": _amounts(spec, "capability"),
        "spec.deserved": _amounts(spec, "deserved"),
        "spec.guarantee.resource": _amounts(spec, "guarantee", "resource"),
    }
    problems = []
    for at, amounts in levels.items():
        for name, (amount, written) in amounts.items():
            if amount < 0:
                problems.append(Problem(field(at, name), f"must not be negative, got {written}"))
            elif _whole(name) and amount != amount.to_integral_value():
                problems.append(Problem(field(at, name), f"must be a whole number, got {written}"))
    capability, deserved = levels["spec.capability"], levels["spec.deserved"]
    for name, (amount, written) in levels["spec.guarantee.resource"].items():
        if name not in deserved:
            problems.append(
                Problem(
                    field("spec.deserved", name),
                    f"required: at least the guarantee {written} (guarantee <= deserved)",
                )
            )
        elif amount > deserved[name][0]:
            problems.append(
                Problem(
                    field("spec.guarantee.resource", name),
                    f"{written} is more than the deserved {deserved[name][1]}",
                )
            )
    for name, (amount, written) in deserved.items():
        if name in capability and amount > capability[name][0]:
            problems.append(
                Problem(
                    field("spec.deserved", name),
                    f"{written} is more than the capability {capability[name][1]}",
                )
            )
    return problems


def _whole(name: str) -> bool:
    return name in WHOLE_RESOURCES or whole(name)


def _hierarchy(annotations: Mapping[str, str]) -> list[Problem]:
    """Volcano's hierarchy annotations: as many weights as queues on the path, each a number
    above 0. (Whether the path is a sub path of another queue's is not checked: it needs every
    queue.)"""
    path, weights = annotations.get(HIERARCHY, ""), annotations.get(HIERARCHY_WEIGHTS, "")
    if not path and not weights:
        return []
    at = field("metadata", "annotations", HIERARCHY_WEIGHTS)
    if len(path.split("/")) != len(weights.split("/")):
        return [
            Problem(
                at,
                f"must have as many weights as {HIERARCHY} has queues "
                f"({len(weights.split('/'))} for {len(path.split('/'))})",
            )
        ]
    for weight in weights.split("/"):
        number = _go_float(weight)
        if number is None:
            return [Problem(at, f"{shown(weight)} is not a number")]
        if not number > 0:
            return [Problem(at, f"{shown(weight)} must be more than 0")]
    return []


def _go_float(text: str) -> float | None:
    """`text` as Go's strconv.ParseFloat reads a decimal (no spaces, no '_')."""
    if not text or text != text.strip() or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _tree(
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
        old is None or moved or any(_exactly(spec, *at) != _exactly(old, *at) for at in LEVELS)
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
                f"queue {above} has {len(groups)} PodGroup(s) ({_listed(groups)}) and no child "
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
            held = limit.get(resource)
            than = (
                f"{whose} {noun} {_amount(held, resource)}"
                if held
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
    """`units` of `resource` exactly, readably: cpu as `500m` or `2`, byte amounts with the
    largest suffix that divides them (`3Gi`, `1500M`), counts as numbers."""
    if resource == "cpu":
        return units_quantity(units, resource)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, size in (*_BINARY, *_DECIMAL):
            if units >= size and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)


def _root_unchanged(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[Problem]:
    """Volcano keeps the root queue's resources as they are (its scheduler owns them)."""
    return [
        Problem(field("spec", *path), "the root queue's resources cannot be changed")
        for path in (("capability",), ("deserved",), ("guarantee", "resource"))
        if _exactly(spec, *path) != _exactly(old, *path)
    ]


def _exactly(spec: Mapping[str, Any], *path: str) -> Any:
    """A level's amounts by value (`1` and `1000m` alike), or as written if one does not parse
    (an old object stored before the rules)."""
    try:
        return {name: amount for name, (amount, _) in _amounts(spec, *path).items()}
    except ValueError:
        listed: Any = spec
        for key in path:
            listed = _mapping(listed).get(key)
        return listed


def check_delete(name: str, view: QueueLookup) -> list[Problem]:
    if name == DEFAULT_QUEUE:
        return [Problem("", "the default queue cannot be deleted: PodGroups with no queue use it")]
    if name == ROOT_QUEUE:
        return [Problem("", "the root queue cannot be deleted: it parents the other queues")]
    problems = []
    children = [c.metadata.name for c in view.children(name)]
    if children:
        problems.append(
            Problem(
                "",
                f"queue {name} cannot be deleted because it has {_count(children, 'child queue')}: "
                f"{_listed(children)} (delete them or give them another parent first)",
            )
        )
    groups = view.pod_groups_in(name)
    if groups:
        problems.append(
            Problem(
                "",
                f"queue {name} still has {len(groups)} PodGroup(s) ({_listed(groups)}): "
                "delete them or move their jobs to another queue first",
            )
        )
    return problems
