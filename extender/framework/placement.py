"""Planning a gang onto nodes: which members to place, and where they go.

`choose` picks the pending members a gang still needs (each task's shortfall, then up to
`minMember`); `place` puts members first fit onto the fullest nodes they may run on, on what is
left after `reserved`; `plan` ties both to the PodGroup's `minResources`. Pure: the same inputs
always give the same slots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from extender.api.objects import Pod
from extender.api.quantity import format_units
from extender.api.resources import CPU, EMPTY, MEMORY, Resources
from extender.api.scheduling import task_of
from extender.cache.snapshot import NodeInfo
from extender.framework.members import GangView, Rejection


@dataclass(frozen=True)
class Slot:
    node: str
    request: Resources


def plan(
    gang: GangView, nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]
) -> tuple[dict[str, Slot], Rejection | None]:
    """Slots for the members the gang still needs on what `reserved` leaves, or why they do not
    fit."""
    assert gang.group is not None
    spec, key = gang.group.spec, gang.key
    existing = gang.ready + len(gang.pending)
    if existing < spec.min_member:
        message = f"gang {key}: {existing}/{spec.min_member} pods of gang {key} exist"
        return {}, Rejection("NotEnoughPods", message)
    chosen, reason = choose(gang)
    if reason is not None:
        return {}, reason
    if spec.min_resources:
        short = min_resources_shortfall(gang, nodes, reserved)
        if short is not None:
            return {}, short
    assignment, failures = place(chosen, nodes, reserved)
    if failures:
        missing = sum(failures.values())
        why = ", ".join(sorted(failures))
        message = f"gang {key}: {missing} of {len(chosen)} members cannot be placed: {why}"
        return {}, Rejection("NotEnoughResources", message)
    requests = {pod.metadata.uid: pod.request for pod in chosen}
    return {uid: Slot(node, requests[uid]) for uid, node in assignment.items()}, None


def choose(gang: GangView) -> tuple[list[Pod], Rejection | None]:
    """The pending members to plan: each task's shortfall first, then up to minMember."""
    assert gang.group is not None
    spec = gang.group.spec
    placed_per_task = gang.ready_per_task
    chosen: list[Pod] = []
    for task, wanted in sorted(spec.min_task_member.items()):
        need = wanted - placed_per_task[task]
        if need <= 0:
            continue
        of_task = [pod for pod in gang.pending if task_of(pod) == task]
        if len(of_task) < need:
            have = placed_per_task[task] + len(of_task)
            message = f"gang {gang.key}: task {task} has {have} of the {wanted} pods it needs"
            return [], Rejection("NotEnoughPodsOfTask", message)
        chosen.extend(of_task[:need])
    taken = {pod.metadata.uid for pod in chosen}
    rest = [pod for pod in gang.pending if pod.metadata.uid not in taken]
    chosen.extend(rest[: max(0, gang.min_member - gang.ready - len(chosen))])
    return chosen, None


def min_resources_shortfall(
    gang: GangView, nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]
) -> Rejection | None:
    assert gang.group is not None
    needed = gang.group.spec.min_resources
    for pod in gang.placed:
        needed = needed - pod.request
    free = EMPTY
    for info in nodes.values():  # on the nodes some pending member may run on
        usable = any(pod.may_run_on(info.labels, info.taints, info.name) for pod in gang.pending)
        if usable and not info.unschedulable:
            free = free + at_least_zero(info.free - reserved.get(info.name, EMPTY))
    short = needed.shortfall(free)
    if short is None:
        return None
    return Rejection(
        "MinResources",
        f"gang {gang.key}: minResources need {short} {format_units(needed[short], short)}, "
        f"{format_units(max(free[short], 0), short)} free on the nodes its pods may run on",
    )


def at_least_zero(resources: Resources) -> Resources:
    return Resources({name: max(amount, 0) for name, amount in resources.items()})


def place(
    members: list[Pod], nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]
) -> tuple[dict[str, str], Counter[str]]:
    """First fit, largest member first, onto the fullest nodes first (binpack's preference),
    on nodes the member may run on (nodeSelector, required node affinity, taints).

    Returns member uid -> node, and per cause ("Insufficient cpu", or no node the member may
    run on) how many members found no node."""
    free = {
        info.name: info.free - reserved.get(info.name, EMPTY)
        for info in nodes.values()
        if not info.unschedulable
    }
    order = sorted(free, key=lambda name: (free[name][CPU], free[name][MEMORY], name))
    ranked = sorted(members, key=largest_first)
    assignment: dict[str, str] = {}
    failures: Counter[str] = Counter()
    for pod in ranked:
        request = pod.request

        def allows(name: str, pod: Pod = pod) -> bool:
            return pod.may_run_on(nodes[name].labels, nodes[name].taints, name)

        # The cheap resource test first: the selector and affinity test runs on nodes with room.
        fit = next((n for n in order if request.shortfall(free[n]) is None and allows(n)), None)
        if fit is not None:
            assignment[pod.metadata.uid] = fit
            free[fit] = free[fit] - request
            continue
        allowed = [n for n in order if allows(n)]  # only to say why it failed
        if not allowed:
            failures["no node matches its nodeSelector, node affinity and tolerations"] += 1
            continue
        roomiest = max(allowed, key=lambda n: (free[n][CPU], free[n][MEMORY]))
        failures[f"Insufficient {request.shortfall(free[roomiest])}"] += 1
    return assignment, failures


def largest_first(pod: Pod) -> tuple[int, int, str]:
    """Sort key: the pods hardest to place first (most cpu, then memory), then by name."""
    return (-pod.request[CPU], -pod.request[MEMORY], pod.metadata.name)
