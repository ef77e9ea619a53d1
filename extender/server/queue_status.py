"""A Queue's status, derived from its PodGroups and what its gangs are allocated. Pure.

`queue_status` is what the queue's status subresource should show:

- counts of its PodGroups by the phase Lahar wrote (`pending`, `inqueue`, `running`, `completed`,
  `unknown`); a PodGroup without a phase yet is pending, and a Failed one counts as completed
  (Volcano's Queue status has no failed count: both are finished);
- `allocated`: what its members bound to nodes request (capacity reserved for an admitted gang's
  pending members is not allocated yet);
- `deserved`: its fair share now;
- `state`: unset is written `Open`; a `Closing` queue becomes `Closed` once none of its PodGroups
  is pending, inqueue, running or unknown; `Open` and `Closed` set by a user stay.

A parent queue's counts and allocation are its whole subtree's (`rolled_up`), so closing a parent
ends Closed once the work under it has finished.

`status_patch` is the JSON merge patch that takes the written status to the wanted one (None when
they are equal): only the fields that differ, and a resource no longer allocated is removed with
`null`, as a merge patch needs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import CLOSED, CLOSING, OPEN, ROOT, PodGroup, Queue, QueueStatus
from extender.framework.engine import QueueTree

_COUNTED = {"Pending": "pending", "Inqueue": "inqueue", "Running": "running"}
_COUNTED |= {"Completed": "completed", "Failed": "completed", "Unknown": "unknown"}
_UNFINISHED = ("pending", "inqueue", "running", "unknown")


def phases_by_queue(groups: Iterable[PodGroup]) -> dict[str, Counter[str]]:
    """Per queue name, how many of its PodGroups are in each status count."""
    counts: dict[str, Counter[str]] = {}
    for group in groups:
        counts.setdefault(group.queue, Counter())[_COUNTED.get(group.status.phase, "pending")] += 1
    return counts


def rolled_up(phases: Mapping[str, Counter[str]], tree: QueueTree) -> dict[str, Counter[str]]:
    """Each queue's counts with those of every queue under it added (root: all of them)."""
    rolled = {name: Counter(counts) for name, counts in phases.items()}
    for name in reversed(list(tree.below(ROOT))):  # children before their parents
        parent = tree.parents[name]
        if name in rolled:
            rolled.setdefault(parent, Counter()).update(rolled[name])
    return rolled


def queue_status(
    queue: Queue, phases: Counter[str], placed: Resources, deserved: Resources = EMPTY
) -> QueueStatus:
    state = queue.status.state or OPEN
    if state == CLOSING and not any(phases[count] for count in _UNFINISHED):
        state = CLOSED
    return QueueStatus(
        state=state,
        pending=phases["pending"],
        inqueue=phases["inqueue"],
        running=phases["running"],
        completed=phases["completed"],
        unknown=phases["unknown"],
        allocated=placed,
        deserved=deserved,
    )


def status_patch(written: QueueStatus, wanted: QueueStatus) -> dict[str, Any] | None:
    """The merge patch of the `status` that makes `written` into `wanted`; None if equal."""
    if written == wanted:
        return None
    patch: dict[str, Any] = {
        field: value
        for field in ("state", "pending", "inqueue", "running", "completed", "unknown")
        if (value := getattr(wanted, field)) != getattr(written, field)
    }
    for name in ("allocated", "deserved"):
        was, now = getattr(written, name), getattr(wanted, name)
        if was != now:
            gone: dict[str, Any] = {resource: None for resource in was if resource not in now}
            patch[name] = gone | now.quantities()
    return patch
