"""How a gang that fits its queue but not the cluster gets capacity: the scale-up modes, which
gangs want nodes, and the book of what was asked of the autoscaler for them. Pure.

Cluster Autoscaler and Karpenter add nodes for pods kube-scheduler marked Unschedulable; a gang
behind Lahar's gate is never tried, so it is never marked. The mode of a gang's queue says what
Lahar does for it when it is refused for want of capacity (`WANTS_CAPACITY`: its members do not
fit at once, or its minResources does not):

- `none`: it waits behind the gate (on-premises clusters: no node will come);
- `provisioningRequest`: Lahar asks Cluster Autoscaler for all of the nodes it needs, or none, with
  one ProvisioningRequest (`gangs.provisioning` makes it; the server's provisioner writes it);
  once provisioned the gang is admitted onto the new capacity ahead of the fair order;
- `unschedulable`: its gate is lifted and its members are refused at filter time, so
  kube-scheduler marks them Unschedulable and the autoscaler sees them; the bind barrier still
  binds no part of the gang, which is placed whole once the nodes exist.

A gang its queue refuses (its capability, a closed or missing queue, gangs ahead of it taking its
share: any cause but want of capacity) never asks for nodes: none is bought for pods a queue may
not run. A Queue chooses its mode with the annotation `lahar.io/scale-up`, for itself and the
queues under it; a queue that says nothing takes its parent's, and the top the policy's
`gang.scaleUp`.

`gangs.wanting` reads the fair order's walk for the gangs that want nodes, and admits those whose
request is Provisioned. `ScaleUps` is the book of what was asked: per gang, the request standing
for it (name, attempt, phase and since when), when the next attempt may be made after one ended
(`Failed`, `BookingExpired`, `CapacityRevoked`: doubling from `retry` up to `retry_max`), why no
request was made for a gang that wants nodes (the cluster does not serve the API, a write
failed), and the gangs shown to the scheduler. The server's provisioner fills it; `lahar
explain` and the PodGroup condition read `describe`.

The same concept at lower layers: `api.scale_up`, the modes' names, and `kube.scale_up`, the writes
that ask the autoscaler for nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from extender.api.engine_settings import ScaleUpSettings
from extender.api.scale_up import SCALE_UP_ANNOTATION, Mode, parse_mode
from extender.api.scheduling import Queue
from extender.gangs.refusals import WANTS_CAPACITY, Cause


def queue_mode(queues: Mapping[str, Queue], name: str, default: Mode) -> tuple[Mode, str | None]:
    """The mode of queue `name` (its annotation, else its nearest parent's, else `default`) and
    what is wrong with an annotation on the way that names no mode (None: nothing), which is
    passed over."""
    seen: set[str] = set()
    problem: str | None = None
    at = name
    while at and at not in seen and at in queues:
        seen.add(at)
        queue = queues[at]
        text = queue.metadata.annotations.get(SCALE_UP_ANNOTATION)
        if text is not None:
            try:
                return parse_mode(text, f"Queue {at} annotation {SCALE_UP_ANNOTATION}"), problem
            except ValueError as error:
                problem = problem or str(error)
        at = queue.spec.parent
    return default, problem


def queue_modes(queues: Mapping[str, Queue], default: Mode) -> dict[str, Mode]:
    """Every queue's mode (`queue_mode`), by name."""
    return {name: queue_mode(queues, name, default)[0] for name in queues}


def wants_nodes(cause: Cause) -> bool:
    """Whether a gang refused for `cause` waits for capacity the cluster lacks (not for a rule of
    its queue, nor behind gangs ahead of it): what an autoscaler could help."""
    return cause in WANTS_CAPACITY


@dataclass(frozen=True)
class Asked:
    """The request standing for a gang, as last seen."""

    namespace: str
    name: str
    attempt: int
    phase: str  # Pending (no condition yet), Accepted, Provisioned, Failed, ...
    since: float  # when it was first seen in this phase (the clock's time)
    message: str = ""  # the autoscaler's message for the phase

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class ScaleUps:
    """What was asked of the autoscaler, per gang (see the module's docstring)."""

    settings: ScaleUpSettings = field(default_factory=ScaleUpSettings)
    _asked: dict[str, Asked] = field(default_factory=dict)
    _retry_at: dict[str, tuple[int, float]] = field(default_factory=dict)  # next attempt, when
    _not_asked: dict[str, str] = field(default_factory=dict)  # why no request was made
    # Gangs refused for want of capacity in a queue whose mode is `unschedulable`, as the last
    # reading of the walk says (`gangs.wanting`): their held members go to the scheduler.
    shown: set[str] = field(default_factory=set)
    # The walk last read (its number) and the gangs it said want nodes.
    read: tuple[int, tuple[str, ...]] | None = None

    def asked(self, key: str) -> Asked | None:
        return self._asked.get(key)

    def asking(self) -> list[str]:
        """The gangs a request stands for."""
        return list(self._asked)

    def known(self) -> list[str]:
        """Every gang the book says anything of."""
        return list(self._asked.keys() | self._retry_at.keys() | self._not_asked.keys())

    def provisioned(self) -> list[str]:
        """The gangs whose request is Provisioned, the longest provisioned first (the autoscaler
        buys in that order, so their nodes come in that order)."""
        found = [
            (asked.since, key) for key, asked in self._asked.items() if asked.phase == "Provisioned"
        ]
        return [key for _, key in sorted(found)]

    def seen(self, key: str, asked: Asked, now: float) -> None:
        """The request for gang `key` is `asked` now (its `since` kept while the phase is the
        same)."""
        before = self._asked.get(key)
        if before is not None and before.name == asked.name and before.phase == asked.phase:
            asked = Asked(
                asked.namespace, asked.name, asked.attempt, asked.phase, before.since, asked.message
            )
        else:
            asked = Asked(
                asked.namespace, asked.name, asked.attempt, asked.phase, now, asked.message
            )
        self._asked[key] = asked
        self._not_asked.pop(key, None)

    def gone(self, key: str) -> None:
        """No request stands for gang `key` any more."""
        self._asked.pop(key, None)

    def ended(self, key: str, attempt: int, now: float) -> float:
        """Attempt `attempt` for gang `key` ended: when the next may be made (kept if set)."""
        next_attempt, at = self._retry_at.get(key, (0, 0.0))
        if next_attempt <= attempt:
            at = now + self.settings.retry_after(attempt)
            self._retry_at[key] = (attempt + 1, at)
        return at

    def next_attempt(self, key: str, now: float) -> int | None:
        """The number of the next attempt for gang `key` if one may be made now (None: it must
        wait)."""
        attempt, at = self._retry_at.get(key, (1, 0.0))
        return attempt if at <= now else None

    def retry_at(self, key: str) -> float | None:
        entry = self._retry_at.get(key)
        return entry[1] if entry is not None else None

    def not_asked(self, key: str, why: str) -> None:
        """No request could be made for gang `key`, for that reason."""
        self._not_asked[key] = why

    def forget(self, key: str) -> None:
        """Gang `key` wants no nodes any more (it runs, is gone, or its queue refuses it)."""
        self._asked.pop(key, None)
        self._retry_at.pop(key, None)
        self._not_asked.pop(key, None)

    def describe(self, key: str, now: float, wall: float | None = None) -> str | None:
        """What the gang waits for from the autoscaler, in a user's words (None: nothing). With
        `wall` (the time now, epoch seconds) times are said as UTC times instead of seconds
        from now, so the words stay the same while nothing changes (a PodGroup condition)."""

        def lasting(since: float) -> str:
            if wall is None:
                return f"for {max(now - since, 0.0):.0f} s"
            return f"since {_utc(wall - (now - since))}"

        def after(at: float) -> str:
            if wall is None:
                return f"in {max(at - now, 0.0):.0f} s"
            return f"at {_utc(wall + (at - now))}"

        asked = self._asked.get(key)
        if asked is not None:
            said = f" ({asked.message})" if asked.message else ""
            if asked.phase == "Pending":
                state = f"created, not Accepted yet, {lasting(asked.since)}"
            elif asked.phase == "Accepted":
                state = f"Accepted, not Provisioned, {lasting(asked.since)}"
            elif asked.phase == "Provisioned":
                state = f"Provisioned {lasting(asked.since)}"
            else:
                retry = self.retry_at(key)
                again = f"; asking again {after(retry)}" if retry is not None else ""
                state = f"{asked.phase}{said}{again}"
                said = ""
            return f"waiting for nodes: ProvisioningRequest {asked.key} {state}{said}"
        why = self._not_asked.get(key)
        if why is not None:
            return f"waiting for nodes: no ProvisioningRequest was made: {why}"
        retry = self.retry_at(key)
        if retry is not None and retry > now:
            return f"waiting for nodes: asking Cluster Autoscaler again {after(retry)}"
        return None


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
