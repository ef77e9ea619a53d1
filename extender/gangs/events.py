"""What the engine decided of a gang, as events: admitted, released, rejected, shown.

The same concept as `cache.events` one layer down: typed, frozen values the ledger publishes into
the process's one hub (`cache.events.Events`, handed to the ledger by `framework.engine.Engine`),
for the waker, the writers, the provisioner, the preemption loop and the metrics to act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.gangs.refusals import Rejection


@dataclass(frozen=True, slots=True)
class GangAdmitted:
    """The gang's plan fits: its slots are reserved."""

    key: str


@dataclass(frozen=True, slots=True)
class GangReleased:
    """The gang's admission ended: it stands, its barrier timed out, or it made no progress."""

    key: str


@dataclass(frozen=True, slots=True)
class GangRejected:
    """The gang was refused anew, or for a new cause (`rejection`)."""

    key: str
    rejection: Rejection


@dataclass(frozen=True, slots=True)
class GangShown:
    """The gang is shown to the scheduler, its scale-up mode `unschedulable` (`gangs.wanting`):
    its PodGroup says so, which has a waiting Job's controller create its pods."""

    key: str
