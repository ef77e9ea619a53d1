"""The plugin protocol: small typed hooks, and one plain value for what a plugin switches on.

A plugin implements only the hooks it needs. Hooks are code the framework calls; node hooks see
the pod's effective request and one node, nothing else, so their answers depend only on
(request, node version). That is what lets the framework keep every node's verdict and score per
request shape and recompute only the nodes that changed (`framework.table`):

- `NodeFilter.filter_node(request, node)`: None when the node can take the pod, else a `Status`.
- `NodeScorer.score_node(request, node)`: 0.0 .. 1.0 (1 = best); the session weighs scorers by
  `weight` and maps the weighted mean onto the extender's 0..10.
- `JobOrder.job_key(gang)`: ranks waiting gangs within a queue in the fair order (lower first);
  plugins rank in tier order (`gangs.order`).

Gang admission, queue shares, the starvation guard and preemption are rules built into the engine,
not hooks another implementation could replace: a plugin only switches them on and tunes them.
What it switches is one frozen value, its `Switches` (the `Switching` protocol), which
`framework.policy` merges over the policy's plugins in tier order into what the engine reads
(`GangSettings`, `Ordering`, `PreemptionSettings`):

- `gang`: gang admission (`gangs.ledger`) and the bind barrier, with these `GangSettings`;
- `queue_shares`: queues are ordered by their share of what they deserve (and may reclaim);
- `starving_after`: seconds after which a waiting gang starves (goes first, drains capacity);
- `preempt_interval`: Lahar evicts whole gangs for gangs that cannot fit, at most one preemption
  per interval, by the actions `preempts_within_queue` (of lower priority, with a plugin that
  `preempts_lower_priority`) and `reclaims_between_queues` (from overused queues, with
  `queue_shares`);
- `spares_gang_cores` and `keeps_victim_shares`: each a rule on whom preempt may evict (Volcano's
  preemptableFn), on unless the plugin's policy entry says `enablePreemptable: false`: only
  members beyond a gang's minMember (for reclaim too, unless `enableReclaimable: false`); only
  while the victim's gang keeps a dominant share at least the preemptor's. `enablePreemptable`
  on a plugin with neither is an error.

`Switches` lives here, not in `api.engine_settings`: it is the plugins' word to the policy, which
the engine never reads (it reads the merged settings), and it needs nothing of the engine but
`GangSettings`.

A plugin is built from its policy arguments by a `PluginFactory`, which validates them and raises
`ValueError("<argument>: <reason>")` on bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
class JobOrder(Plugin, Protocol):
    def job_key(self, gang: WaitingGang) -> float: ...


@dataclass(frozen=True)
class Switches:
    """What one plugin switches on (or tunes) in the engine's built-in rules; unset is off.

    Where only one value can hold (the gang settings, the starvation limit, the preemption
    interval), the first plugin in tier order that sets it wins; an on/off rule is on when any
    plugin turns it on."""

    gang: GangSettings | None = None  # gang admission and the bind barrier, with these settings
    queue_shares: bool = False  # queues ordered by their share of what they deserve
    starving_after: float | None = None  # seconds; None: no starvation guard
    preempts_lower_priority: bool = False  # a gang may take lower-priority victims in its queue
    preempt_interval: float | None = None  # seconds between preemptions; None: no preemption
    preempts_within_queue: bool = False  # preempt's `preempt` action
    reclaims_between_queues: bool = False  # preempt's `reclaim` action
    # Rules on victims, each switched off by the plugin's `enablePreemptable: false` (gang's, for
    # reclaim, by `enableReclaimable: false`):
    spares_gang_cores: bool = False  # only members beyond a gang's minMember
    keeps_victim_shares: bool = False  # only while the victim's gang keeps its dominant share


@runtime_checkable
class Switching(Plugin, Protocol):
    """Switches on or tunes rules built into the engine, with these `switches`."""

    switches: Switches


PluginFactory = Callable[[Mapping[str, Argument]], Plugin]
