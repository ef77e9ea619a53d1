"""Binpack: prefer the node that will be fullest after placing the pod, to keep whole nodes free
for big jobs. Volcano's formula and arguments:

    score = Σ_r w_r * (used_r + request_r) / allocatable_r  /  Σ_r w_r

over the resources the pod requests that have a weight (`binpack.cpu`, `binpack.memory`, and
`binpack.resources.<name>` for each name in `binpack.resources`); a node where any of them would
overflow scores 0. `binpack.weight` is the plugin's weight against other score plugins.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.resources import Resources
from extender.cache.snapshot import NodeInfo
from extender.framework.plugin import Argument
from extender.plugins.arguments import scorer_arguments

NAME = "binpack"


class Binpack:
    name = NAME

    def __init__(self, weight: float, resource_weights: Mapping[str, int]) -> None:
        self.weight = weight
        self.resource_weights = dict(resource_weights)

    def score_node(self, request: Resources, node: NodeInfo) -> float:
        total = 0.0
        weights = 0
        requested, allocatable = node.requested, node.allocatable
        for name, amount in request.items():
            w = self.resource_weights.get(name, 0)
            if not w:
                continue
            capacity = allocatable[name]
            used = requested[name] + amount
            if capacity <= 0 or used > capacity:
                return 0.0
            total += w * used / capacity
            weights += w
        return total / weights if weights else 0.0


def configure(arguments: Mapping[str, Argument]) -> Binpack:
    return Binpack(*scorer_arguments(arguments, NAME))
