"""The starvation guard (Volcano's sla): a gang waiting too long goes first and drains capacity.

A gang refused for longer than `sla.waitingTimeSeconds` is *starving*: it goes before every other
job of its queue, and when it still does not fit it takes the free capacity of the nodes it would
fit on (the fair order's drain), so a stream of small gangs stops taking what it needs; as their
pods end, the capacity accumulates for it until it fits. A PodGroup may set its own limit with
Volcano's annotation `sla-waiting-time` (a Go duration such as `10m`), as a Volcano Job does.

    - name: sla
      arguments:
        sla.waitingTimeSeconds: 300
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.engine_settings import WaitingGang
from extender.framework.plugin import Argument, Switches
from extender.plugins.arguments import reject_unknown, seconds

NAME = "sla"
WAITING = "sla.waitingTimeSeconds"
DEFAULT_WAITING = 300.0


class Sla:
    name = NAME

    def __init__(self, starving_after: float) -> None:
        self.switches = Switches(starving_after=starving_after)

    def job_key(self, gang: WaitingGang) -> float:
        return 0.0 if gang.starving else 1.0


def configure(arguments: Mapping[str, Argument]) -> Sla:
    reject_unknown(arguments, (WAITING,), NAME)
    return Sla(seconds(arguments, WAITING, DEFAULT_WAITING))
