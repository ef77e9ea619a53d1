"""Gang scheduling (PodGroups): all or nothing, with a bind barrier.

The rules live in `gangs.ledger` (admission, reservations) and `actions.bind` (the barrier);
this plugin switches them on and carries their timing, from the policy file:

    - name: gang
      arguments:
        gang.barrierTimeoutSeconds: 20      # below the scheduler's httpTimeout (30s shipped)
        gang.backoffSeconds: 10             # a gang whose barrier timed out waits this long
        gang.reservationTimeoutSeconds: 60  # an admitted gang reserving capacity without progress
        gang.maxPodsInFlight: 256           # admitted members not yet at the barrier, at most
        gang.scaleUp: none                  # none | provisioningRequest | unschedulable
        gang.scaleUpRetrySeconds: 60        # after a ProvisioningRequest ended, doubling

`gang.scaleUp` is the cluster's default for how a gang that fits its queue but not the cluster
gets nodes (`gangs.scale_up`); a Queue's annotation `lahar.io/scale-up` sets its own.

With the `preempt` plugin, gang's rule on whom preempt may evict (Volcano's preemptableFn) is
on unless the entry says `enablePreemptable: false` (beside `name`, as in Volcano; absent means
true): then only members a gang has beyond its minMember are victims, never a whole gang
(Lahar never evicts part of a gang's minMember either way). Off, whole gangs may be too.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.engine_settings import GangSettings, ScaleUpSettings
from extender.api.scale_up import parse_mode
from extender.framework.plugin import Argument, Switches
from extender.plugins.arguments import reject_unknown, seconds, weight

NAME = "gang"
DEFAULTS = GangSettings()
KEYS = {
    "gang.barrierTimeoutSeconds": "barrier_timeout",
    "gang.backoffSeconds": "backoff",
    "gang.reservationTimeoutSeconds": "reservation_timeout",
}
IN_FLIGHT = "gang.maxPodsInFlight"
SCALE_UP = "gang.scaleUp"
RETRY = "gang.scaleUpRetrySeconds"


class Gang:
    name = NAME

    def __init__(self, settings: GangSettings) -> None:
        # (`enablePreemptable`, `enableReclaimable` switch its rule on victims off)
        self.switches = Switches(gang=settings, spares_gang_cores=True)


def configure(arguments: Mapping[str, Argument]) -> Gang:
    reject_unknown(arguments, [*KEYS, IN_FLIGHT, SCALE_UP, RETRY], NAME)
    values = {
        field: seconds(arguments, key, getattr(DEFAULTS, field)) for key, field in KEYS.items()
    }
    in_flight = weight(arguments, IN_FLIGHT, DEFAULTS.max_pods_in_flight)
    if in_flight < 1:
        raise ValueError(f"{IN_FLIGHT}: must be a whole number >= 1, got {in_flight!r}")
    scale_defaults = ScaleUpSettings()
    scale_up = ScaleUpSettings(
        default=parse_mode(arguments.get(SCALE_UP, scale_defaults.default.value), SCALE_UP),
        retry=seconds(arguments, RETRY, scale_defaults.retry),
    )
    return Gang(GangSettings(**values, max_pods_in_flight=in_flight, scale_up=scale_up))
