"""Every node's verdict and score for one request shape, kept current incrementally.

Filter and prioritize run for every pod, over every candidate node (5,000 in a big cluster), and
batch jobs submit many pods of the same shape. A `NodeTable` holds, for one request, the nodes the
filters reject (with their status) and every node's 0..10 score (and, for a reader that asks, the
nodes they pass). Brought to a new snapshot it re-evaluates only the nodes the change log names, so
a call costs a pass over the candidate names instead of a call into every plugin for every node.
`Tables` keeps the tables of recent shapes (LRU-bounded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cachetools import LRUCache

from extender.api.resources import Resources
from extender.api.wire import host_priority_json
from extender.cache.snapshot import NodeInfo, Snapshot
from extender.framework.plugin import NodeFilter, NodeScorer
from extender.framework.status import Status

MAX_SCORE = 10  # k8s.io/kube-scheduler/extender/v1 MaxExtenderPriority


@dataclass
class NodeTable:
    request: Resources
    generation: int = -1
    rejected: dict[str, Status] = field(default_factory=dict)
    # The other nodes, those the request fits, built the first time someone asks for them (the
    # simulator's scheduler, which needs no reasons) and kept from then on: in a full cluster they
    # are the few, so what passes is found from them, not by taking the many rejected from every
    # node. The extender explains every rejection, never asks, so never pays for it.
    fits: set[str] | None = None
    scores: dict[str, int] = field(default_factory=dict)
    # Each node's element of a prioritize reply, encoded when its score changes: the reply to a
    # call over 5,000 nodes is then one join instead of 5,000 objects to build and serialise.
    # Nodes scoring 0 have none: the reply leaves them out (kube-scheduler adds nothing for a node
    # an extender does not list, as for a 0).
    encoded: dict[str, bytes] = field(default_factory=dict)
    # The nodes by score, built the first time someone asks for the best nodes (the simulator's
    # scheduler) and kept from then on; the extender never asks, so never pays for it.
    ranked: dict[int, set[str]] | None = None

    def set_status(self, name: str, status: Status | None) -> None:
        """The filters' verdict on node `name`: rejected with `status`, or passed (None)."""
        if status is not None:
            self.rejected[name] = status
            if self.fits is not None:
                self.fits.discard(name)
        else:
            self.rejected.pop(name, None)
            if self.fits is not None:
                self.fits.add(name)

    def passing(self) -> set[str]:
        """The nodes the filters pass (kept from the first call on, see `fits`)."""
        if self.fits is None:
            self.fits = {name for name in self.scores if name not in self.rejected}
        return self.fits

    def by_score(self) -> dict[int, set[str]]:
        if self.ranked is None:
            self.ranked = {}
            for name, score in self.scores.items():
                self.ranked.setdefault(score, set()).add(name)
        return self.ranked

    def set_score(self, name: str, score: int) -> None:
        previous = self.scores.get(name)
        if previous == score:
            return
        self.scores[name] = score
        if score:
            self.encoded[name] = host_priority_json(name, score)
        else:
            self.encoded.pop(name, None)
        if self.ranked is not None:
            if previous is not None:
                self.ranked[previous].discard(name)
            self.ranked.setdefault(score, set()).add(name)

    def forget(self, name: str) -> None:
        self.rejected.pop(name, None)
        if self.fits is not None:
            self.fits.discard(name)
        previous = self.scores.pop(name, None)
        self.encoded.pop(name, None)
        if self.ranked is not None and previous is not None:
            self.ranked[previous].discard(name)


class Tables:
    def __init__(
        self, filters: Sequence[NodeFilter], scorers: Sequence[NodeScorer], size: int = 256
    ) -> None:
        self._filters = list(filters)
        self._scorers = [s for s in scorers if s.weight > 0]
        self._weights = sum(s.weight for s in self._scorers)
        self._tables: LRUCache[Resources, NodeTable] = LRUCache(maxsize=size)

    def current(self, snapshot: Snapshot, request: Resources) -> NodeTable:
        """The table for `request`, brought up to `snapshot`."""
        table = self._tables.get(request)
        if table is None:
            table = self._tables[request] = NodeTable(request)
        if table.generation == snapshot.generation:
            return table
        changed = snapshot.changed_since(table.generation) if table.generation >= 0 else None
        if changed is None:
            for name in list(table.scores):
                table.forget(name)
            changed = set(snapshot.nodes)
        nodes = snapshot.nodes
        for name in changed:
            info = nodes.get(name)
            if info is None:
                table.forget(name)
            else:
                self._evaluate(table, info)
        table.generation = snapshot.generation
        return table

    def _evaluate(self, table: NodeTable, node: NodeInfo) -> None:
        request = table.request
        status = None
        for plugin in self._filters:
            status = plugin.filter_node(request, node)
            if status is not None:
                break
        table.set_status(node.name, status)
        score = 0
        if self._weights:
            total = sum(s.weight * s.score_node(request, node) for s in self._scorers)
            score = int(total / self._weights * MAX_SCORE + 0.5)
        table.set_score(node.name, score)
