"""Queue rules (`scheduling.volcano.sh/v1beta1`, cluster-scoped), Volcano's, and the view of
queues every rule that names a queue reads.

CREATE and UPDATE: the spec parses (weight 1..65535, priority not negative, quantities), amounts
are not negative and whole for resources counted whole (extended ones, pods), and per resource
guarantee <= deserved <= capability, a guaranteed resource deserved too (a resource capability
does not name is not capped); `status.state`, when given, is one Kubernetes operators expect
(Open, Closed, Closing, Unknown); `dequeueStrategy` and `type` as Volcano's schema has them; the
hierarchy annotations have a weight above 0 per queue of the path; `spec.parent` is a DNS
subdomain, not the queue itself, and exists (checked on CREATE and when it changes); the root
queue's resources do not change. DELETE: the `default` queue stays (PodGroups without a queue land
there), the `root` queue stays, and so does a queue that PodGroups still name: deleting it would
strand them. Unlike Volcano, a queue whose state is empty counts as Open, as the scheduler counts
it, and so does `default` before it exists (the scheduler counts it as there and creates it).
The rules that need the queue tree (depth, child queues, a parent's resources against its
children's) are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from extender.admission.containers import whole
from extender.admission.names import MAX_SUBDOMAIN, dns_subdomain
from extender.admission.problems import INT32, Problem, field, parse, shown
from extender.api.quantity import parse_quantity
from extender.api.scheduling import DEFAULT_QUEUE, Queue

STATES = ("Open", "Closed", "Closing", "Unknown")
MAX_WEIGHT = 65535
ROOT_QUEUE = "root"  # Volcano's top of the queue hierarchy
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


def queue_problems(name: str, queue: Queue | None) -> list[Problem]:
    """Why `name` cannot take new work: it does not exist, or it is not Open."""
    if queue is None and name == DEFAULT_QUEUE:
        return []  # the scheduler creates it, and counts it as there meanwhile
    if queue is None:
        return [Problem("", f"queue {shown(name)} does not exist")]
    if not queue.open:
        return [Problem("", f"queue {shown(name)} is {queue.status.state}: it takes no new work")]
    return []


def parse_queue(obj: Mapping[str, Any] | None) -> tuple[Queue | None, list[Problem]]:
    return parse(Queue, obj, "Queue", ("metadata", "spec", "status"))


def check_queue(
    obj: Mapping[str, Any] | None,
    view: QueueLookup | None = None,
    old: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """CREATE (`old` None) and UPDATE. `view` finds a parent queue (not looked for without it)."""
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
    problems += _parent(queue, view, None if old is None else _mapping(old.get("spec")))
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


def _parent(queue: Queue, view: QueueLookup | None, old: Mapping[str, Any] | None) -> list[Problem]:
    """`spec.parent` is a DNS subdomain, not the queue itself, and (on CREATE, or when it
    changes) an existing queue; `root` and none need no queue. The rules that need the whole tree
    (depth, child queues, resources against the parent's) are not checked here."""
    parent, name = queue.spec.parent, queue.metadata.name
    if not parent or parent == ROOT_QUEUE:
        return []
    if (reason := dns_subdomain(parent)) is not None:
        return [Problem("spec.parent", f"{shown(parent)} {reason}")]
    if parent == name:
        return [Problem("spec.parent", f"queue {name} cannot be its own parent")]
    if view is None or (old is not None and old.get("parent") == parent):
        return []
    if view.queue(parent) is None:
        return [Problem("spec.parent", f"queue {shown(parent)} does not exist")]
    return []


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
    groups = view.pod_groups_in(name)
    if groups:
        listed = ", ".join(sorted(groups)[:5]) + (", ..." if len(groups) > 5 else "")
        return [
            Problem(
                "",
                f"queue {name} still has {len(groups)} PodGroup(s) ({listed}): "
                "delete them or move their jobs to another queue first",
            )
        ]
    return []
