"""Queue rules (`scheduling.volcano.sh/v1beta1`, cluster-scoped), Volcano's.

CREATE and UPDATE: the spec parses (weight 1..65535, priority not negative, quantities), amounts
are not negative and whole for resources counted whole (extended ones, pods), and per resource
guarantee <= deserved <= capability, a guaranteed resource deserved too (a resource capability
does not name is not capped); `status.state`, when given, is one Kubernetes operators expect
(Open, Closed, Closing, Unknown); `dequeueStrategy` and `type` as Volcano's schema has them; the
hierarchy annotations have a weight above 0 per queue of the path; Lahar's scale-up annotation
(`lahar.io/scale-up`) names a mode (`gangs.scale_up`); the root queue's resources do
not change; and the queue's place and resources fit the queue tree (`admission.queue_tree`).
Work (a Job, a PodGroup) goes in a leaf queue that is Open under Open ancestors
(`work_queue_problems`).

DELETE: the `default` queue stays (PodGroups without a queue land there), the `root` queue stays,
and so do a queue that PodGroups still name (deleting it would strand them) and one with child
queues (they would hang under nothing). Unlike Volcano, a queue whose state is empty counts as
Open, as the scheduler counts it, and so does `default` before it exists (the scheduler counts it
as there and creates it).

The same concept at a lower layer: `gangs.queues`, the queues as fairness accounts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.admission.containers import whole
from extender.admission.names import MAX_SUBDOMAIN
from extender.admission.problems import (
    INT32,
    Problem,
    amounts,
    by_value,
    field,
    mapping,
    parse,
    shown,
)
from extender.admission.queue_tree import (
    ROOT_QUEUE,
    QueueLookup,
    count,
    lineage,
    listed,
    parent_of,
    tree_problems,
)
from extender.api.scale_up import MODES, SCALE_UP_ANNOTATION
from extender.api.scheduling import DEFAULT_QUEUE, Queue

STATES = ("Open", "Closed", "Closing", "Unknown")
MAX_WEIGHT = 65535
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
                f"queue {name} has {count(children, 'child queue')} ({listed(children)}): "
                "jobs go in leaf queues",
            )
        )
    return problems


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
    spec, raw = queue.spec, mapping(obj.get("spec"))
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
    problems += _scale_up(queue.metadata.annotations)
    problems += tree_problems(queue, raw, view, None if old is None else mapping(old.get("spec")))
    if old is not None and queue.metadata.name == ROOT_QUEUE:
        problems += _root_unchanged(raw, mapping(old.get("spec")))
    return problems


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


def _resources(spec: Mapping[str, Any]) -> list[Problem]:
    """Each amount not negative, whole for resources counted whole (extended ones, pods); per
    resource guarantee <= deserved <= capability, a guaranteed resource deserved too (a resource
    not in capability is not capped)."""
    levels = {
        "spec.capability": amounts(spec, "capability"),
        "spec.deserved": amounts(spec, "deserved"),
        "spec.guarantee.resource": amounts(spec, "guarantee", "resource"),
    }
    problems = []
    for at, written_amounts in levels.items():
        for name, (amount, written) in written_amounts.items():
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


def _scale_up(annotations: Mapping[str, str]) -> list[Problem]:
    """Lahar's scale-up mode for the queue, when it names one: one of the modes."""
    text = annotations.get(SCALE_UP_ANNOTATION)
    if text is None or text in MODES.split(", "):
        return []
    at = field("metadata", "annotations", SCALE_UP_ANNOTATION)
    return [Problem(at, f"{shown(text)} is not a scale-up mode (one of {MODES})")]


def _go_float(text: str) -> float | None:
    """`text` as Go's strconv.ParseFloat reads a decimal (no spaces, no '_')."""
    if not text or text != text.strip() or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _root_unchanged(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[Problem]:
    """Volcano keeps the root queue's resources as they are (its scheduler owns them)."""
    return [
        Problem(field("spec", *path), "the root queue's resources cannot be changed")
        for path in (("capability",), ("deserved",), ("guarantee", "resource"))
        if by_value(spec, *path) != by_value(old, *path)
    ]


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
                f"queue {name} cannot be deleted because it has {count(children, 'child queue')}: "
                f"{listed(children)} (delete them or give them another parent first)",
            )
        )
    groups = view.pod_groups_in(name)
    if groups:
        problems.append(
            Problem(
                "",
                f"queue {name} still has {len(groups)} PodGroup(s) ({listed(groups)}): "
                "delete them or move their jobs to another queue first",
            )
        )
    return problems
