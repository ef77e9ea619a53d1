"""Job rules for UPDATE: what may change once a job exists, and the numbers and names that may.

Only `minAvailable`, `maxRetry`, `priorityClassName` and each task's `replicas`, `minAvailable` and
`maxRetry` may change (scaling, and the knobs the controller reads afresh at every pass); tasks
may not be added or removed. Every other field that differs is named. The counts are checked as
on CREATE, and so are the names (scaling up makes longer pod names). Metadata and status are not
the webhook's concern (the controller writes status through its subresource, which this webhook
does not see).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.admission.job_defaults import defaulted_spec
from extender.admission.jobs import name_problems, number_problems, parse_job
from extender.admission.problems import Problem, field
from extender.admission.topology import update_problems
from extender.api.batch import Job

MUTABLE_SPEC = frozenset({"minAvailable", "maxRetry", "priorityClassName", "tasks"})
MUTABLE_TASK = frozenset({"replicas", "minAvailable", "maxRetry"})
FIXED = (
    "cannot change once the job exists (only minAvailable, maxRetry, priorityClassName and "
    "the tasks' replicas, minAvailable and maxRetry can)"
)


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
            if key not in MUTABLE_TASK and _value(before, key) != _value(after, key):
                problems.append(Problem(field("spec", "tasks", index, key), FIXED))
    return problems


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
