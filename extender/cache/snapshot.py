"""What one scheduling decision sees: immutable per-node views and the snapshot that holds them.

A `NodeInfo` never changes after it is built; when a node or a pod on it changes, the cluster state
builds a new one and notes the node's name in its `ChangeLog`. A snapshot is a shallow copy of the
name -> NodeInfo map (made only when something changed) plus the generation it was taken at, so it
is cheap, and `changed_since(g)` tells incremental consumers which nodes differ from generation g.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.api.objects import Taint
from extender.api.resources import Resources


@dataclass(frozen=True, eq=False, slots=True)
class NodeInfo:
    """One node as policies see it: what it offers and what the pods counted on it request."""

    name: str
    allocatable: Resources
    requested: Resources
    unschedulable: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    free: Resources = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "free", self.allocatable - self.requested)

    def same_as(self, other: NodeInfo) -> bool:
        """Whether `other` offers policies exactly what this one does."""
        return (
            self.allocatable == other.allocatable
            and self.requested == other.requested
            and self.unschedulable == other.unschedulable
            and self.labels == other.labels
            and self.taints == other.taints
        )


class ChangeLog:
    """Which node changed at which generation: one entry per generation, append-only, bounded.

    Generation g+1 is the change recorded after generation g; entries older than the bound are
    dropped, and asking about them answers None ("too old, start over").
    """

    def __init__(self, limit: int = 100_000) -> None:
        self._limit = limit
        self._base = 0  # the generation before the first entry kept
        self._names: list[str] = []

    @property
    def generation(self) -> int:
        return self._base + len(self._names)

    def record(self, name: str) -> int:
        self._names.append(name)
        if len(self._names) > self._limit:
            dropped = len(self._names) // 2
            del self._names[:dropped]
            self._base += dropped
        return self.generation

    def changed(self, since: int, until: int) -> set[str] | None:
        """Names changed after generation `since` up to `until`; None if `since` is forgotten."""
        if since < self._base:
            return None
        return set(self._names[since - self._base : until - self._base])


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The nodes at one moment (by name), with the generation they were taken at.

    `nodes` is a private copy typed read-only (not a MappingProxyType: lookups in it are the hot
    path of every filter call)."""

    nodes: Mapping[str, NodeInfo]
    generation: int
    changes: ChangeLog | None = None
    membership: int = 0  # changes only when a node is added or removed

    @classmethod
    def of(
        cls,
        nodes: Mapping[str, NodeInfo],
        generation: int = 0,
        changes: ChangeLog | None = None,
        membership: int = 0,
    ) -> Snapshot:
        return cls(dict(nodes), generation, changes, membership)

    def changed_since(self, generation: int) -> set[str] | None:
        """Names of nodes that differ from `generation`; None when that is not known."""
        if generation == self.generation:
            return set()
        if self.changes is None or generation > self.generation:
            return None
        return self.changes.changed(generation, self.generation)
