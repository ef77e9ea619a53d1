"""The values of gang admission: its settings, what an admission holds, why a gang waits, the
verdict for one pod, and one walk of the fair order. Pure data; `framework.gang` decides."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from extender.api.resources import Resources
from extender.framework.members import Rejection
from extender.framework.placement import Slot
from extender.framework.queues import QueueView
from extender.framework.turns import Run, Turn, Turns


@dataclass(frozen=True)
class GangSettings:
    barrier_timeout: float = 20.0  # seconds; below the scheduler's httpTimeout
    backoff: float = 10.0  # seconds a gang waits after its barrier timed out
    reservation_timeout: float = 60.0  # seconds an admitted gang may hold capacity without progress
    # Pods of admitted gangs not yet at the bind barrier (their slots) beyond which no gang held
    # by Lahar's gate is let in: what kube-scheduler's queue holds of gangs at once, so that an
    # admitted gang's members reach the barrier together however long the backlog.
    max_pods_in_flight: int = 256


@dataclass
class Admission:
    slots: dict[str, Slot]  # member uid -> its reserved place, until the member is bound
    progress_at: float
    admitted_at: float = 0.0


@dataclass(frozen=True)
class Waiting:
    """A gang that was refused: since when, why, and the order it was refused in (if it was
    ordered): while that order stands the answer is the same, without looking at the gang again."""

    since: float
    rejection: Rejection
    refused_in: int | None = None


@dataclass(frozen=True)
class Verdict:
    """For one pod: None reason = go on (plain fit, minus reservations); else fail every node.

    `credit` is, per node, the reservation of the pod's own gang it may take there: its own
    slot's, and on other nodes a slot of its gang planned for a member asking the same (the
    member binding there takes that slot and leaves its own to the other), so the pod may go to
    any node the scheduler offers that has room once the other gangs' reservations are kept."""

    reason: str | None = None
    credit: Mapping[str, Resources] = field(default_factory=dict)


PLAIN = Verdict()


@dataclass(frozen=True)
class Order:
    """One walk of the fair order and the state it was made in. The walk is taken as far as
    asked: `turns` holds the turns reached so far, `rest` yields the others."""

    number: int
    made_at: tuple[int, ...]
    valid_until: float  # the clock's time a gang starts starving or a backoff ends
    turns: Turns
    queues: dict[str, QueueView]
    contenders: AbstractSet[str]  # keys, as the walk lined them up
    rest: Iterator[Turn | Run]  # (runs: refusals whose turns `turns` makes when read)
