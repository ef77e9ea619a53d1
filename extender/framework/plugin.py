"""The plugin protocol: small typed hooks, each plugin implementing only the ones it needs.

Node hooks see the pod's effective request and one node, nothing else, so their answers depend only
on (request, node version). That is what lets the framework keep every node's verdict and score per
request shape and recompute only the nodes that changed (`framework.table`):

- `NodeFilter.filter_node(request, node)`: None when the node can take the pod, else a `Status`.
- `NodeScorer.score_node(request, node)`: 0.0 .. 1.0 (1 = best); the session weighs scorers by
  `weight` and maps the weighted mean onto the extender's 0..10.
- `GangRules.settings`: present, it turns on gang admission (`gangs.ledger`) and the barrier.
- `JobOrder.job_key(gang)`: ranks waiting gangs within a queue in the fair order (lower first);
  plugins rank in tier order (`gangs.order`).
- `QueueShares`: present, queues are ordered by their share of what they deserve.
- `StarvationGuard.starving_after`: seconds after which a waiting gang starves (goes first and
  drains capacity).
- `Preempts.preempt_interval`: present, Lahar evicts whole gangs for gangs that cannot fit, by
  the actions `preempts_within_queue` (of lower priority, with `PreemptsByPriority`) and
  `reclaims_between_queues` (from overused queues, with `QueueShares`).
- `SparesGangCores` and `KeepsVictimShares`: each has a rule on whom preempt may evict
  (Volcano's preemptableFn), on unless the plugin's policy entry says `enablePreemptable: false`:
  only members beyond a gang's minMember; only while the victim's gang keeps a dominant share at
  least the preemptor's. `enablePreemptable` on a plugin with neither is an error.

A plugin is built from its policy arguments by a `PluginFactory`, which validates them and raises
`ValueError("<argument>: <reason>")` on bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from extender.api.engine_settings import GangSettings, WaitingGang
from extender.api.resources import Resources
from extender.cache.snapshot import NodeInfo
from extender.framework.status import Status

Argument = str | int | float | bool | list[str]  # (a list: a YAML list of words)


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class NodeFilter(Plugin, Protocol):
    def filter_node(self, request: Resources, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class NodeScorer(Plugin, Protocol):
    weight: float

    def score_node(self, request: Resources, node: NodeInfo) -> float: ...


@runtime_checkable
class GangRules(Plugin, Protocol):
    """Turns on gang admission and the bind barrier, with these settings."""

    settings: GangSettings


@runtime_checkable
class JobOrder(Plugin, Protocol):
    def job_key(self, gang: WaitingGang) -> float: ...


@runtime_checkable
class QueueShares(Plugin, Protocol):
    """Orders queues by their share of what they deserve (and lets starved queues reclaim)."""

    orders_queues_by_share: bool


@runtime_checkable
class StarvationGuard(Plugin, Protocol):
    starving_after: float


@runtime_checkable
class PreemptsByPriority(Plugin, Protocol):
    """A gang may take victims of lower priority in its own queue."""

    preempts_lower_priority: bool


@runtime_checkable
class Preempts(Plugin, Protocol):
    """Turns on Lahar-initiated preemption and reclaim, at most one every `preempt_interval` s:
    within a queue by priority (`preempts_within_queue`), between queues by their shares
    (`reclaims_between_queues`)."""

    preempt_interval: float
    preempts_within_queue: bool
    reclaims_between_queues: bool


@runtime_checkable
class SparesGangCores(Plugin, Protocol):
    """Its preemptable rule: preempt takes only members a gang has beyond its minMember."""

    spares_gang_cores: bool


@runtime_checkable
class KeepsVictimShares(Plugin, Protocol):
    """Its preemptable rule: preempt takes a unit only while the victim's gang keeps a dominant
    share at least the preemptor's once placed."""

    keeps_victim_shares: bool


PluginFactory = Callable[[Mapping[str, Argument]], Plugin]
