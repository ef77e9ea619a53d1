"""Job rules for Volcano's topology fields: a task's `partitionPolicy` and `topologyPolicy`, and
`networkTopology` (the job's and each partition policy's), as Volcano's job webhook has them,
every problem at once, each naming its field.

- partitionPolicy: totalPartitions and partitionSize at least 1, their product the task's
  replicas; minPartitions from 0 to totalPartitions, and, when set (> 0) with the task's
  minAvailable, minPartitions * partitionSize equal to minAvailable (the mutating webhook derives
  minAvailable so; `partition_minimum`). Checked on CREATE and UPDATE (scaling a task must keep
  its partitions whole).
- networkTopology: highestTierAllowed (at least 0) or highestTierName (253 characters at most),
  not both; the mode is hard or soft (the model reads no other).
- topologyPolicy other than none: every container and init container asks for a whole number of
  CPUs, more than none (requests, or its limits when it has no requests), as NUMA alignment needs.

Volcano stops at the first partition problem of a task; these rules report each one, since each
is checked only where it has a meaning (the product once both factors are valid). `check` also
adds the admission warnings for the fields Lahar carries but does not act on yet
(`unhonoured`).

The same concept at a lower layer: `gangs.topology`, which places a gang within what its
`networkTopology` and partitions ask (the HyperNodes it reads are `api.topology`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from extender.admission.problems import INT32, Problem, field, shown
from extender.admission.unhonoured import job_fields
from extender.api.batch import Job, PartitionPolicy, TaskSpec
from extender.api.quantity import parse_quantity
from extender.api.scheduling import NetworkTopology

MAX_TIER_NAME = 253
Loc = tuple[str | int, ...]


def check(job: Job, warnings: list[str]) -> list[Problem]:
    """CREATE: the rules below, and a warning for each field Lahar does not act on yet."""
    warnings += [str(field) for field in job_fields(job)]
    problems = update_problems(job)
    for index, task in enumerate(job.spec.tasks):
        problems += _topology_policy(task, ("spec", "tasks", index))
    return problems


def update_problems(job: Job) -> list[Problem]:
    """CREATE and UPDATE: the partition policies and network topologies."""
    problems = list(network_topology_problems(job.spec.network_topology, "spec", "networkTopology"))
    for index, task in enumerate(job.spec.tasks):
        if task.partition_policy is not None:
            at = ("spec", "tasks", index, "partitionPolicy")
            problems += _partitions(task, task.partition_policy, at)
    return problems


def network_topology_problems(
    topology: NetworkTopology | None, *at: str | int
) -> Iterator[Problem]:
    if topology is None:
        return
    allowed, name = topology.highest_tier_allowed, topology.highest_tier_name
    if allowed is not None and name:
        yield Problem(field(*at), "give highestTierAllowed or highestTierName, not both")
    if allowed is not None and not 0 <= allowed <= INT32:
        yield Problem(
            field(*at, "highestTierAllowed"), f"must be from 0 to {INT32}, got {shown(allowed)}"
        )
    if name is not None and len(name) > MAX_TIER_NAME:
        yield Problem(
            field(*at, "highestTierName"),
            f"must be at most {MAX_TIER_NAME} characters, got {len(name)}",
        )


def partition_minimum(task: Mapping[str, Any]) -> int | None:
    """The minAvailable Volcano derives for a task (as written, not yet read) from its partition
    policy: minPartitions * partitionSize when minPartitions is set (> 0); None otherwise."""
    policy = task.get("partitionPolicy")
    if not isinstance(policy, Mapping):
        return None
    partitions, size = _count(policy.get("minPartitions")), _count(policy.get("partitionSize"))
    return partitions * size if partitions and size else None


def _count(value: Any) -> int:
    """A count as written, or 0 when it is not one."""
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= INT32
    return int(value) if valid else 0


def _partitions(task: TaskSpec, policy: PartitionPolicy, at: Loc) -> Iterator[Problem]:
    total, size, least = policy.total_partitions, policy.partition_size, policy.min_partitions
    valid = True
    for name, value in (("totalPartitions", total), ("partitionSize", size)):
        if not 1 <= value <= INT32:
            valid = False
            yield Problem(field(*at, name), f"must be from 1 to {INT32}, got {shown(value)}")
    if not 0 <= least <= INT32:
        valid = False
        yield Problem(field(*at, "minPartitions"), f"must be from 0 to {INT32}, got {shown(least)}")
    yield from network_topology_problems(policy.network_topology, *at, "networkTopology")
    if not valid:
        return
    if total * size != task.replicas:
        yield Problem(
            field(*at),
            f"totalPartitions * partitionSize is {total} * {size} = {total * size}, "
            f"not the task's {task.replicas} replicas",
        )
    if least > total:
        yield Problem(
            field(*at, "minPartitions"), f"{least} is more than the {total} totalPartitions"
        )
    elif least > 0 and task.min_available is not None and least * size != task.min_available:
        yield Problem(
            field(*at, "minPartitions"),
            f"minPartitions * partitionSize is {least} * {size} = {least * size}, "
            f"not the task's minAvailable {task.min_available}",
        )


def _topology_policy(task: TaskSpec, at: Loc) -> Iterator[Problem]:
    policy = task.topology_policy
    if policy is None or policy == "none":
        return
    spec = task.template.get("spec")
    if not isinstance(spec, Mapping):
        return  # the template rules say what is missing
    for kind in ("containers", "initContainers"):
        containers = spec.get(kind)
        for index, container in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(container, Mapping):
                continue
            where = (*at, "template", "spec", kind, index, "resources")
            yield from _whole_cpus(container.get("resources"), policy, where)


def _whole_cpus(resources: Any, policy: str, where: Loc) -> Iterator[Problem]:
    resources = resources if isinstance(resources, Mapping) else {}
    requests = resources.get("requests")
    side = "requests" if isinstance(requests, Mapping) and requests else "limits"
    amounts = resources.get(side)
    value = amounts.get("cpu") if isinstance(amounts, Mapping) else None
    try:
        cpus = parse_quantity(value) if value is not None else Decimal(0)
    except ValueError:
        return  # the template rules name a quantity that does not parse
    if cpus <= 0 or cpus != cpus.to_integral_value():
        got = shown(value) if value is not None else "none"
        yield Problem(
            field(*where, side, "cpu"),
            f"topologyPolicy {policy} needs a whole number of CPUs (requests, or limits when "
            f"there are no requests), got {got}",
        )
