"""Job rules for UPDATE, Volcano's: what may change once a job exists, and the numbers and names
that may.

Only `minAvailable`, `priorityClassName` and each task's `replicas` and `minAvailable` may change
(scaling); tasks may not be added or removed. Every other field that differs is named; quantities
in the pod templates are compared by value (`1` and `1000m` alike), as Volcano compares them. The
counts are checked as on CREATE, and so are the names (scaling up makes longer pod names).
Metadata and status are not the webhook's concern (the controller writes status through its
subresource, which this webhook does not see).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.admission.job_defaults import defaulted_spec
from extender.admission.jobs import name_problems, number_problems, parse_job
from extender.admission.problems import Problem, field
from extender.admission.topology import update_problems
from extender.api.batch import Job
from extender.api.quantity import parse_quantity

MUTABLE_SPEC = frozenset({"minAvailable", "priorityClassName", "tasks"})
MUTABLE_TASK = frozenset({"replicas", "minAvailable"})
FIXED = (
    "cannot change once the job exists (only minAvailable, priorityClassName and the tasks' "
    "replicas and minAvailable can)"
)
# In a pod template: the maps of quantities, and the maps whose emptiness is no value at all.
QUANTITIES = frozenset({"requests", "limits", "overhead"})
MAPS = QUANTITIES | {"labels", "annotations", "nodeSelector"}


def check_update(
    old: Mapping[str, Any], new: Mapping[str, Any], job: Job, scheduler_name: str = ""
) -> list[Problem]:
    """`new` (read as `job`) may replace `old`. Both are compared with the defaults in place and
    an empty list or map equal to none, so a job stored before the webhook ran (without its
    defaults) can still be scaled. A job being deleted, or an update that leaves the spec as it
    was (labels, finalizers), is not the webhook's concern."""
    if unchanged(old, new, job):
        return []
    old_spec, new_spec = _comparable(old, scheduler_name), defaulted_spec(new, scheduler_name)
    problems = [*number_problems(job), *name_problems(job), *update_problems(job)]
    for key in sorted(set(old_spec) | set(new_spec)):
        if key not in MUTABLE_SPEC and _value(old_spec, key) != _value(new_spec, key):
            problems.append(Problem(field("spec", key), FIXED))
    old_tasks, new_tasks = _tasks(old_spec), _tasks(new_spec)
    if len(old_tasks) != len(new_tasks):
        problems.append(
            Problem(
                "spec.tasks",
                f"tasks cannot be added or removed ({len(old_tasks)} before, {len(new_tasks)} now)",
            )
        )
        return problems
    for index, (before, after) in enumerate(zip(old_tasks, new_tasks, strict=True)):
        for key in sorted(set(before) | set(after)):
            if key in MUTABLE_TASK:
                continue
            old_value, new_value = _value(before, key), _value(after, key)
            if old_value != new_value and (
                key != "template" or _by_value(old_value) != _by_value(new_value)
            ):
                problems.append(Problem(field("spec", "tasks", index, key), FIXED))
    return problems


def _by_value(value: Any, key: str = "") -> Any:
    """A template as Volcano compares it (Kubernetes' semantic equality): quantities by amount
    (`1`, `"1"` and `1000m` alike), and a null, an empty list or an empty map of names (labels,
    requests) the same as none. Anything that does not read as a quantity stays as written."""
    if isinstance(value, Mapping):
        by_value: dict[str, Any] = {}
        for name, item in value.items():
            read = _by_value(item, name)
            if read is None or read == [] or (read == {} and name in MAPS):
                continue
            by_value[name] = _amount(read) if key in QUANTITIES else read
        return by_value
    if isinstance(value, list):
        return [_by_value(item) for item in value]
    return value


def _amount(quantity: Any) -> Any:
    try:
        return parse_quantity(quantity)
    except ValueError:
        return quantity


def unchanged(old: Mapping[str, Any], new: Mapping[str, Any], job: Job) -> bool:
    """Not the webhook's concern: the job is being deleted, or its spec is as it was (labels,
    finalizers)."""
    return job.metadata.deletion_timestamp is not None or _spec(old) == _spec(new)


def _comparable(old: Mapping[str, Any], scheduler_name: str) -> Mapping[str, Any]:
    """The old spec with its defaults, when it reads; as stored otherwise."""
    parsed, _ = parse_job(old)
    return _spec(old) if parsed is None else defaulted_spec(old, scheduler_name)


def _value(obj: Mapping[str, Any], key: str) -> Any:
    value = obj.get(key)
    return None if value in (None, [], {}) else value


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _tasks(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tasks as mappings: the old object was never parsed here, so a malformed one (stored
    before the CRD had a schema) reads as tasks with no fields, not as a crash."""
    tasks = spec.get("tasks")
    if not isinstance(tasks, list):
        return []
    return [task if isinstance(task, Mapping) else {} for task in tasks]
