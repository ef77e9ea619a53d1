"""The scale-up modes: what Lahar does for a gang that fits its queue but not the cluster.

A Queue chooses its mode with the annotation `lahar.io/scale-up` (for itself and the queues under
it); the policy's `gang.scaleUp` is the mode of the queues that say nothing. The modes' meaning is
the engine's (`gangs.scale_up`); here are their names, which the policy, the admission webhook,
the simulator and the engine all read.

The same concept at higher layers: `gangs.scale_up`, what each mode does for a gang, and
`kube.scale_up`, the writes that ask an autoscaler for nodes.
"""

from __future__ import annotations

from enum import StrEnum

SCALE_UP_ANNOTATION = "lahar.io/scale-up"


class Mode(StrEnum):
    NONE = "none"
    PROVISIONING_REQUEST = "provisioningRequest"
    UNSCHEDULABLE = "unschedulable"


MODES = ", ".join(mode.value for mode in Mode)


def parse_mode(text: object, where: str) -> Mode:
    """`text` as a mode; a ValueError naming `where` and the modes when it is none of them."""
    for mode in Mode:
        if text == mode.value:
            return mode
    raise ValueError(f"{where}: {text!r} is not a scale-up mode (one of {MODES})")
