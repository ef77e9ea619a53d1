"""Volcano's Job defaults as a minimal JSONPatch: only the fields that are missing (or, as in
Volcano, a zero maxRetry or minAvailable), each set by its own `add` operation, so an object that
already has them gets no patch at all (idempotent) and no field the webhook does not know is
touched (Volcano replaces the whole task list).

The defaults: queue `default`; schedulerName (the one this webhook is configured with); maxRetry 3
when 0 or missing, the job's and each task's; task name `default<i>` when empty; task
minAvailable = its replicas when unset (with a partition policy that sets minPartitions:
minPartitions * partitionSize); job minAvailable = the tasks' minAvailable summed when 0 or
missing; dnsPolicy ClusterFirstWithHostNet for a hostNetwork template without one; the svc plugin
for jobs using pytorch, tensorflow, mpi or ray (their pods find each other through it) and the
ssh plugin for mpi (its launcher logs in to the workers). Applied on CREATE and on UPDATE, so
`kubectl replace` with the original file keeps the defaults. Numbers beyond int32 get no derived
default (the rules refuse them).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from extender.admission.problems import INT32, add
from extender.admission.topology import partition_minimum
from extender.api.scheduling import DEFAULT_QUEUE

DEFAULT_MAX_RETRY = 3
# Plugins a framework plugin needs, added as Volcano's webhook adds them: the pods of pytorch,
# tensorflow, mpi and ray find each other through svc's Service; mpi's launcher logs in to its
# workers with ssh's keys.
NEEDS = {
    "pytorch": ("svc",),
    "tensorflow": ("svc",),
    "mpi": ("svc", "ssh"),
    "ray": ("svc",),
}


def job_defaults(job: Mapping[str, Any], scheduler_name: str) -> list[dict[str, Any]]:
    """The JSONPatch that gives `job` (already read without problems) Volcano's defaults."""
    spec = job.get("spec")
    if not isinstance(spec, Mapping):
        return []  # nothing to default into; the validating webhook says what is missing
    return [add(("spec", *loc), value) for loc, value in _defaults(spec, scheduler_name)]


def defaulted_spec(job: Mapping[str, Any], scheduler_name: str) -> dict[str, Any]:
    """The job's spec (read without problems) with the defaults in place. Only the containers on
    the way to a default are copied (an object nested deep elsewhere is shared, never walked)."""
    spec = job.get("spec")
    copied: dict[str, Any] = dict(spec) if isinstance(spec, Mapping) else {}
    fresh = {id(copied)}
    for loc, value in list(_defaults(copied, scheduler_name)):
        target: Any = copied
        for key in loc[:-1]:
            child = target[key]
            if id(child) not in fresh:
                child = copy.copy(child)
                fresh.add(id(child))
                target[key] = child
            target = child
        target[loc[-1]] = value
    return copied


def _defaults(
    spec: Mapping[str, Any], scheduler_name: str
) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if not spec.get("queue"):
        yield ("queue",), DEFAULT_QUEUE
    if not spec.get("schedulerName") and scheduler_name:
        yield ("schedulerName",), scheduler_name
    if not spec.get("maxRetry"):
        yield ("maxRetry",), DEFAULT_MAX_RETRY
    needed = 0
    for index, task in enumerate(spec.get("tasks") or []):
        if not task.get("name"):
            yield ("tasks", index, "name"), f"default{index}"
        replicas = task.get("replicas") or 0
        least = partition_minimum(task) or replicas  # Volcano's: minPartitions whole partitions
        if task.get("minAvailable") is None and least <= INT32:
            yield ("tasks", index, "minAvailable"), least
        needed += least if task.get("minAvailable") is None else task["minAvailable"]
        if not task.get("maxRetry"):
            yield ("tasks", index, "maxRetry"), DEFAULT_MAX_RETRY
        pod = (task.get("template") or {}).get("spec")
        if isinstance(pod, Mapping) and pod.get("hostNetwork") is True and not pod.get("dnsPolicy"):
            yield ("tasks", index, "template", "spec", "dnsPolicy"), "ClusterFirstWithHostNet"
    if not spec.get("minAvailable") and 0 < needed <= INT32:  # else the rules refuse the job
        yield ("minAvailable",), needed
    plugins = spec.get("plugins")
    if isinstance(plugins, Mapping):
        wanted = {p for name, needs in NEEDS.items() if name in plugins for p in needs}
        for plugin in sorted(wanted - set(plugins)):
            yield ("plugins", plugin), []
