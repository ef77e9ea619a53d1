"""Spread (least allocated): prefer the node with the most room left after placing the pod, the
stock scheduler's default, for services and small jobs that should not share a failure domain.

    score = Σ_r w_r * (allocatable_r - used_r - request_r) / allocatable_r  /  Σ_r w_r

over the weighted resources (`spread.cpu`, `spread.memory`, `spread.resources.<name>` for each name
in `spread.resources`) the node offers; `spread.weight` weighs the plugin against others.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.resources import Resources
from extender.cache.snapshot import NodeInfo
from extender.framework.plugin import Argument
from extender.plugins.arguments import scorer_arguments

NAME = "spread"


class Spread:
    name = NAME

    def __init__(self, weight: float, resource_weights: Mapping[str, int]) -> None:
        self.weight = weight
        self.resource_weights = {r: w for r, w in resource_weights.items() if w}

    def score_node(self, request: Resources, node: NodeInfo) -> float:
        total = 0.0
        weights = 0
        for name, w in self.resource_weights.items():
            capacity = node.allocatable[name]
            if capacity <= 0:
                continue
            left = capacity - node.requested[name] - request[name]
            total += w * max(left, 0) / capacity
            weights += w
        return total / weights if weights else 0.0


def configure(arguments: Mapping[str, Argument]) -> Spread:
    return Spread(*scorer_arguments(arguments, NAME))
