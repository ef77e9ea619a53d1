"""Queues share the cluster by weight (Volcano's proportion).

Each queue deserves a water-filled share of the schedulable capacity (`gangs.fairness`): by
weight, within its capability, no more than it asks for, no less than its guarantee; `deserved`
in the Queue's spec fixes it. In the fair order the queue least far into its deserved share goes
first; with the `preempt` plugin's `reclaim` action, a queue below its share may reclaim whole
gangs (or spare members) from reclaimable queues above theirs, never a protected pod
(`volcano.sh/preemptable: false`, Volcano's conformance).

    - name: proportion
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.framework.plugin import Argument, Switches
from extender.plugins.arguments import reject_unknown

NAME = "proportion"


class Proportion:
    name = NAME
    switches = Switches(queue_shares=True)


def configure(arguments: Mapping[str, Argument]) -> Proportion:
    reject_unknown(arguments, (), NAME)
    return Proportion()
