"""Dominant resource fairness within a queue: the job holding the least of the cluster goes first.

A job's share is the largest fraction of any cluster resource its placed members hold (cpu,
memory, GPUs, ...; the pod count aside). Among jobs of the same queue that earlier job-order
plugins do not tell apart, the lower share goes first; then the older job.

    - name: drf
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.framework.plugin import Argument
from extender.gangs.lineup import WaitingGang
from extender.plugins.arguments import reject_unknown

NAME = "drf"


class Drf:
    name = NAME

    def job_key(self, gang: WaitingGang) -> float:
        return gang.dominant_share


def configure(arguments: Mapping[str, Argument]) -> Drf:
    reject_unknown(arguments, (), NAME)
    return Drf()
