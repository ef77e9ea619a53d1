"""Job priority: a gang of higher PriorityClass goes first within its queue, and may preempt.

The gang's priority is its PodGroup's `priorityClassName` (the PriorityClass's value), else the
highest priority among its pods (the apiserver sets a pod's from its class). In the fair order it
ranks jobs in tier order with the other job-order plugins; with the `preempt` plugin's `preempt`
action, a gang may evict whole gangs (or spare members) of lower priority in its own queue, within
gang's and drf's rules on victims and never a protected pod (`volcano.sh/preemptable: false`,
Volcano's conformance).

    - name: priority
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.engine_settings import WaitingGang
from extender.framework.plugin import Argument, Switches
from extender.plugins.arguments import reject_unknown

NAME = "priority"


class Priority:
    name = NAME
    switches = Switches(preempts_lower_priority=True)

    def job_key(self, gang: WaitingGang) -> float:
        return -float(gang.priority)


def configure(arguments: Mapping[str, Argument]) -> Priority:
    reject_unknown(arguments, (), NAME)
    return Priority()
