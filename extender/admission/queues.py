"""Queue rules (`scheduling.volcano.sh/v1beta1`, cluster-scoped), and the view of queues every
rule that names a queue reads.

CREATE and UPDATE: the spec parses (weight 1..65535, quantities), and per resource guarantee <=
deserved <= capability (a resource a level does not name is not bounded by it); `status.state`,
when given, is one Kubernetes operators expect (Open, Closed, Closing, Unknown). DELETE: the
`default` queue stays (PodGroups without a queue land there), and so does a queue that PodGroups
still name: deleting it would strand them. Unlike Volcano, a queue whose state is empty counts as
Open, as the scheduler counts it, and so does `default` before it exists (the scheduler counts it
as there and creates it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from extender.admission.problems import Problem, field, parse, shown
from extender.api.quantity import format_units
from extender.api.resources import Resources
from extender.api.scheduling import DEFAULT_QUEUE, Queue

STATES = ("Open", "Closed", "Closing", "Unknown")
MAX_WEIGHT = 65535


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


def check_queue(obj: Mapping[str, Any] | None) -> list[Problem]:
    """CREATE and UPDATE."""
    queue, problems = parse_queue(obj)
    if queue is None:
        return problems
    spec = queue.spec
    if spec.weight > MAX_WEIGHT:
        problems.append(Problem("spec.weight", f"must be at most {MAX_WEIGHT}, got {spec.weight}"))
    state = queue.status.state
    if state and state not in STATES:
        problems.append(
            Problem("status.state", f"must be one of {', '.join(STATES)}, got {shown(state)}")
        )
    guarantee = spec.guarantee.resource
    problems += _at_most(guarantee, "spec.guarantee.resource", spec.deserved, "deserved")
    problems += _at_most(spec.deserved, "spec.deserved", spec.capability, "capability")
    problems += _at_most(guarantee, "spec.guarantee.resource", spec.capability, "capability")
    return problems


def _at_most(lower: Resources, at: str, upper: Resources, named: str) -> list[Problem]:
    return [
        Problem(
            field(at, resource),
            f"{format_units(amount, resource)} is more than the {named} "
            f"{format_units(upper[resource], resource)}",
        )
        for resource, amount in lower.items()
        if resource in upper and amount > upper[resource]
    ]


def check_delete(name: str, view: QueueLookup) -> list[Problem]:
    if name == DEFAULT_QUEUE:
        return [Problem("", "the default queue cannot be deleted: PodGroups with no queue use it")]
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
