"""Dominant resource fairness within a queue: the job allocated the least of the cluster goes first.

A job's share is the largest fraction of any cluster resource its placed members use (cpu,
memory, GPUs, ...; the pod count aside). Among jobs of the same queue that earlier job-order
plugins do not tell apart, the lower share goes first; then the older job.

With the `preempt` plugin, drf's rule on whom preempt may evict (Volcano's preemptableFn) is on
unless the entry says `enablePreemptable: false` (absent means true, as in Volcano): a gang or
member is a victim only if its gang's share once it is evicted is at least the preemptor's once
placed (within 1e-6), so preemption never leaves a victim's job smaller than the preemptor's.

    - name: drf
      enablePreemptable: false   # Volcano's shipped configuration
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.engine_settings import WaitingGang
from extender.framework.plugin import Argument, Switches
from extender.plugins.arguments import reject_unknown

NAME = "drf"


class Drf:
    name = NAME
    switches = Switches(keeps_victim_shares=True)  # (`enablePreemptable` switches it off)

    def job_key(self, gang: WaitingGang) -> float:
        return gang.dominant_share


def configure(arguments: Mapping[str, Argument]) -> Drf:
    reject_unknown(arguments, (), NAME)
    return Drf()
