"""Gang scheduling (PodGroups): all or nothing, with a bind barrier.

The rules live in `framework.gang` (admission, reservations) and `actions.bind` (the barrier);
this plugin switches them on and carries their timing, from the policy file:

    - name: gang
      arguments:
        gang.barrierTimeoutSeconds: 20      # below the scheduler's httpTimeout (30s shipped)
        gang.backoffSeconds: 10             # a gang whose barrier timed out waits this long
        gang.reservationTimeoutSeconds: 60  # an admitted gang holding capacity without progress
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.framework.gang_types import GangSettings
from extender.framework.plugin import Argument
from extender.plugins.arguments import reject_unknown, seconds

NAME = "gang"
KEYS = {
    "gang.barrierTimeoutSeconds": "barrier_timeout",
    "gang.backoffSeconds": "backoff",
    "gang.reservationTimeoutSeconds": "reservation_timeout",
}


class Gang:
    name = NAME

    def __init__(self, settings: GangSettings) -> None:
        self.settings = settings


def configure(arguments: Mapping[str, Argument]) -> Gang:
    reject_unknown(arguments, KEYS, NAME)
    defaults = GangSettings()
    values = {
        field: seconds(arguments, key, getattr(defaults, field)) for key, field in KEYS.items()
    }
    return Gang(GangSettings(**values))
