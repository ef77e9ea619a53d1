"""A builder for Volcano's HyperNode, reading like the tree it describes:

make_hyper_node("t2-p0").tier(2, "spine").hyper_nodes("t1-r0", "t1-r1").model()
make_hyper_node("t1-r0").nodes("n0", "n1").label(SOURCE_LABEL, SOURCE).build()
make_hyper_node("gpu").regex("^gpu-")
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Self

from extender.api.topology import HyperNode


class HyperNodeBuilder:
    """A HyperNode of `tier` whose members are nodes or HyperNodes."""

    def __init__(self, name: str) -> None:
        self._hyper_node: dict[str, Any] = {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {"tier": 1, "members": []},
        }

    def tier(self, tier: int, name: str = "") -> Self:
        self._hyper_node["spec"]["tier"] = tier
        if name:
            self._hyper_node["spec"]["tierName"] = name
        return self

    def label(self, key: str, value: str) -> Self:
        self._hyper_node["metadata"].setdefault("labels", {})[key] = value
        return self

    def nodes(self, *names: str) -> Self:
        return self._members("Node", names)

    def hyper_nodes(self, *names: str) -> Self:
        return self._members("HyperNode", names)

    def regex(self, pattern: str) -> Self:
        member = {"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}
        self._hyper_node["spec"]["members"].append(member)
        return self

    def _members(self, kind: str, names: Iterable[str]) -> Self:
        self._hyper_node["spec"]["members"].extend(
            {"type": kind, "selector": {"exactMatch": {"name": name}}} for name in names
        )
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._hyper_node)

    def model(self) -> HyperNode:
        return HyperNode.model_validate(self.build())


def make_hyper_node(name: str) -> HyperNodeBuilder:
    return HyperNodeBuilder(name)
