"""Lahar-initiated preemption and reclaim: evict whole gangs so a more deserving gang fits.

With this plugin, a gang refused for lack of capacity may have the fewest whole gangs (or members
beyond a gang's minMember) evicted for it through the Eviction API: of lower priority in its own
queue when the `priority` plugin is on; from reclaimable queues above their deserved share, for a
queue below its own, when `proportion` is on. At most one preemption every
`preempt.intervalSeconds`; Events on both PodGroups name the preemptor and the victims.

    - name: preempt
      arguments:
        preempt.intervalSeconds: 5
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.framework.plugin import Argument
from extender.plugins.arguments import reject_unknown, seconds

NAME = "preempt"
INTERVAL = "preempt.intervalSeconds"


class Preempt:
    name = NAME

    def __init__(self, interval: float) -> None:
        self.preempt_interval = interval


def configure(arguments: Mapping[str, Argument]) -> Preempt:
    reject_unknown(arguments, (INTERVAL,), NAME)
    return Preempt(seconds(arguments, INTERVAL, 5.0))
