"""Resource fit: does the pod's effective request fit in what the node has left?

Lahar is the resource authority for its scheduler profiles (they switch off the in-tree
NodeResourcesFit filter), so this covers every resource the pod requests: cpu, memory, ephemeral
storage, extended resources and the pod count. A node that could never fit the pod, even empty, is
*unresolvable* (preempting pods there would not help); one that is merely full is *unschedulable*.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.quantity import format_units
from extender.api.resources import PODS, Resources
from extender.cache.snapshot import NodeInfo
from extender.framework.plugin import Argument
from extender.framework.status import Status, insufficient
from extender.plugins.arguments import reject_unknown

NAME = "predicates"


def fit(request: Resources, node: NodeInfo) -> Status | None:
    """None when `request` fits in `node.free`, else why not."""
    short = request.shortfall(node.free)
    if short is None:
        return None
    wanted, allocatable = request[short], node.allocatable[short]
    if short == PODS:
        return Status.unschedulable(f"Too many pods: {allocatable} of {allocatable} in use")
    if wanted > allocatable:
        has = f"allocatable {format_units(allocatable, short)}" if allocatable else "node has none"
        return Status.unresolvable(
            f"Insufficient {short}: requested {format_units(wanted, short)}, {has}"
        )
    return Status.unschedulable(insufficient(short, wanted, node.free[short]))


class Predicates:
    name = NAME

    def filter_node(self, request: Resources, node: NodeInfo) -> Status | None:
        return fit(request, node)


def configure(arguments: Mapping[str, Argument]) -> Predicates:
    reject_unknown(arguments, (), NAME)
    return Predicates()
