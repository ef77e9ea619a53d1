"""What the policy sets for the engine: the values the policy's plugins hand to gang admission,
the fair order and preemption, read from the policy file by `framework.policy`.

They are plain frozen values with no behaviour of the engine's, so that the policy, the plugins
and the engine share them without the framework reaching into the engine (`framework.engine` is
its only door): `GangSettings` (the gang plugin: barrier, backoff, reservations, scale-up),
`Ordering` and the `WaitingGang` its job-order keys rank (the priority, drf, sla and proportion
plugins), `PreemptionSettings` and its `Rules` (the preempt plugin, and the victim rules of gang's
and drf's `enablePreemptable`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from extender.api.scale_up import Mode


@dataclass(frozen=True)
class ScaleUpSettings:
    default: Mode = Mode.NONE  # the mode of queues that say nothing (the policy's gang.scaleUp)
    retry: float = 60.0  # seconds before the second attempt after a request ended
    retry_max: float = 900.0  # the longest wait between attempts (the wait doubles)

    def retry_after(self, attempt: int) -> float:
        """Seconds to wait after attempt number `attempt` (1, 2, ...) ended."""
        return float(min(self.retry * 2 ** max(attempt - 1, 0), self.retry_max))


@dataclass(frozen=True)
class GangSettings:
    barrier_timeout: float = 20.0  # seconds; below the scheduler's httpTimeout
    backoff: float = 10.0  # seconds a gang waits after its barrier timed out
    reservation_timeout: float = 60.0  # seconds a reservation may go without progress
    # Pods of admitted gangs not yet at the bind barrier (their slots) beyond which no gang held
    # by Lahar's gate is let in: what kube-scheduler's queue holds of gangs at once, so that an
    # admitted gang's members reach the barrier together however long the backlog.
    max_pods_in_flight: int = 256
    # What a gang that fits its queue but not the cluster does to get nodes (`gangs.scale_up`).
    scale_up: ScaleUpSettings = field(default_factory=ScaleUpSettings)


@dataclass(frozen=True)
class WaitingGang:
    """A waiting gang as the job-order plugins see it."""

    key: str
    queue: str
    priority: int
    dominant_share: float  # DRF: of the cluster, the largest fraction it uses of any resource
    since: float  # when it started waiting (the clock's seconds)
    starving: bool  # waiting longer than the starvation limit


JobKey = Callable[[WaitingGang], float]  # lower goes first


@dataclass(frozen=True)
class Ordering:
    """The order rules the policy's plugins turn on."""

    job_keys: tuple[JobKey, ...] = ()
    by_queue_share: bool = True  # proportion: the least served queue goes first
    starving_after: float | None = None  # seconds; None: no starvation guard


@dataclass(frozen=True)
class Rules:
    """Who may be evicted: the preempt plugin's actions (each with the plugin it needs), and
    the victim rules of the plugins whose `enablePreemptable` is on (for preempt's victims)."""

    preempt: bool = True  # lower priority, same queue
    reclaim: bool = True  # overused reclaimable queues, for a queue below its share
    spare_members_only: bool = False  # gang's rule, for preempt: never a whole gang
    reclaims_spares_only: bool = False  # gang's rule, for reclaim (its enableReclaimable)
    keeps_share: bool = False  # drf's rule: a victim's gang keeps a share >= the preemptor's


@dataclass(frozen=True)
class PreemptionSettings:
    """At most one preemption per `interval` seconds, and who may be evicted (`rules`: the
    preempt plugin's actions, by priority and by queue shares, and gang's and drf's rules on
    victims as `enablePreemptable` leaves them; protected pods never, whatever the rules)."""

    interval: float
    rules: Rules
