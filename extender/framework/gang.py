"""Gang admission: a gang's members get nodes only when all it still needs fit at once.

`Gangs` is the ledger of admitted gangs and what they hold. A gang (the pods naming one PodGroup)
is *admitted* when a placement plan for its unplaced members up to `minMember` (and each task's
`minTaskMember`; `minResources` when set) fits the capacity left after the reservations of gangs
admitted before it. The plan's slots are then *reserved*: other pods are filtered away from that
capacity, and a member may use its own slot or any capacity nobody reserved. A slot is consumed
when its member is bound (or assumed at the bind barrier); the admission ends when the gang
stands (`minMember` placed), is released by the barrier's timeout (then the gang backs off), or
makes no progress for `reservation_timeout` seconds.

A refused gang is remembered with the state its plan failed in (cluster generation, gang version,
ledger version), so the other members asked about in that state get the same answer at once.
Pure: no I/O, the clock is handed in; callbacks tell the server whom to wake.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from extender.api.objects import Pod
from extender.api.quantity import format_units
from extender.api.resources import CPU, EMPTY, MEMORY, Resources
from extender.api.scheduling import PodGroup, gang_key, task_of
from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState


@dataclass(frozen=True)
class GangSettings:
    barrier_timeout: float = 20.0  # seconds; below the scheduler's httpTimeout
    backoff: float = 10.0  # seconds a gang waits after its barrier timed out
    reservation_timeout: float = 60.0  # seconds an admitted gang may hold capacity without progress


@dataclass(frozen=True)
class Slot:
    node: str
    request: Resources


@dataclass
class Admission:
    slots: dict[str, Slot]  # member uid -> its reserved place, until the member is bound
    progress_at: float


@dataclass(frozen=True)
class GangView:
    """One gang as the cluster state shows it now."""

    key: str
    group: PodGroup | None
    placed: list[Pod]  # counted on a node (bound, or assumed by Lahar's bind)
    succeeded: list[Pod]
    pending: list[Pod]  # unplaced, not finished, not being deleted
    failed: list[Pod] = field(default_factory=list)

    @property
    def ready(self) -> int:
        return len(self.placed) + len(self.succeeded)

    @property
    def ready_per_task(self) -> Counter[str]:
        return Counter(task_of(pod) for pod in self.placed + self.succeeded)

    @property
    def min_member(self) -> int:
        return self.group.spec.min_member if self.group is not None else 1

    @property
    def stands(self) -> bool:
        """minMember members ready, and each task's minTaskMember of them."""
        if self.ready < self.min_member:
            return False
        tasks = self.group.spec.min_task_member if self.group is not None else {}
        ready = self.ready_per_task
        return all(ready[task] >= wanted for task, wanted in tasks.items())


def view_gang(state: ClusterState, key: str) -> GangView:
    placed: list[Pod] = []
    pending: list[Pod] = []
    succeeded: list[Pod] = []
    failed: list[Pod] = []
    for pod in state.gang_pods(key):
        if pod.status.phase == "Succeeded":
            succeeded.append(pod)
        elif pod.finished:
            failed.append(pod)
        elif state.placed_on(pod.metadata.uid) is not None:
            placed.append(pod)
        elif pod.metadata.deletion_timestamp is None:
            pending.append(pod)
    return GangView(key, state.pod_groups.get(key), placed, succeeded, pending, failed)


@dataclass(frozen=True)
class Rejection:
    """Why a gang is not admitted: `cause` is a short class (metrics), `message` the full reason."""

    cause: str  # NoPodGroup | BackingOff | NotEnoughPods | NotEnoughPodsOfTask | MinResources
    #             | NotEnoughResources
    message: str


@dataclass(frozen=True)
class Waiting:
    """A gang that was refused: since when, why, and the state its plan failed in (if it was
    planned): in that same state the answer is the same, without looking at the gang again."""

    since: float
    rejection: Rejection
    planned_at: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class Verdict:
    """For one pod: None reason = go on (plain fit, minus reservations); else fail every node."""

    reason: str | None = None
    own_slot: Slot | None = None


PLAIN = Verdict()


@dataclass
class Gangs:
    settings: GangSettings = field(default_factory=GangSettings)
    clock: Callable[[], float] = time.monotonic
    admissions: dict[str, Admission] = field(default_factory=dict)
    backoff_until: dict[str, float] = field(default_factory=dict)
    waiting: dict[str, Waiting] = field(default_factory=dict)  # refused gangs
    version: int = 0
    on_admitted: list[Callable[[str], None]] = field(default_factory=list)
    on_released: list[Callable[[str], None]] = field(default_factory=list)
    on_rejected: list[Callable[[str, Rejection], None]] = field(default_factory=list)
    _reserved: dict[str, Resources] = field(default_factory=dict)
    _reserved_at: int = -1

    # -- reading -------------------------------------------------------------------------------

    def reserved(self) -> Mapping[str, Resources]:
        """Per node, the capacity held by admitted gangs' unconsumed slots."""
        if self._reserved_at != self.version:
            totals: dict[str, Resources] = {}
            for admission in self.admissions.values():
                for slot in admission.slots.values():
                    totals[slot.node] = totals.get(slot.node, EMPTY) + slot.request
            self._reserved, self._reserved_at = totals, self.version
        return self._reserved

    # -- deciding ------------------------------------------------------------------------------

    def verdict(self, state: ClusterState, nodes: Mapping[str, NodeInfo], pod: Pod) -> Verdict:
        """What the gang rules say about filtering `pod` now (admitting its gang if it can)."""
        key = gang_key(pod)
        if key is None:
            return PLAIN
        now = (state.generation, state.groups_version, self.version)
        waiting = self.waiting.get(key)
        if waiting is not None and waiting.planned_at == now:
            return Verdict(waiting.rejection.message)  # refused in this very state already
        gang = view_gang(state, key)
        if gang.group is not None:
            admission = self._current(gang)
            if admission is not None:
                return Verdict(own_slot=admission.slots.get(pod.metadata.uid))
            if gang.stands:
                return PLAIN
        slots: dict[str, Slot] = {}
        rejection, planned_at = self._blocked(gang), None
        if rejection is None:
            (slots, rejection), planned_at = self.plan(gang, nodes), now
        if rejection is not None:
            return self._reject(key, rejection, planned_at)
        self._admit(gang, slots)
        return Verdict(own_slot=slots.get(pod.metadata.uid))

    def _blocked(self, gang: GangView) -> Rejection | None:
        key = gang.key
        if gang.group is None:
            return Rejection(
                "NoPodGroup",
                f"gang {key}: PodGroup {key} does not exist; its pods wait until it is created",
            )
        if self.backoff_until.get(key, 0.0) > self.clock():
            return Rejection(
                "BackingOff",
                f"gang {key}: backing off {self.settings.backoff:.0f}s because its members did "
                f"not all reach bind within {self.settings.barrier_timeout:.0f}s",
            )
        return None

    def _reject(
        self, key: str, rejection: Rejection, planned_at: tuple[int, int, int] | None
    ) -> Verdict:
        """Remember why the gang waits; tell listeners when it is rejected anew or for a new
        cause (not once per member asked, nor when only the figures in the message moved)."""
        previous = self.waiting.get(key)
        since = previous.since if previous is not None else self.clock()
        self.waiting[key] = Waiting(since, rejection, planned_at)
        if previous is None or previous.rejection.cause != rejection.cause:
            for callback in self.on_rejected:
                callback(key, rejection)
        return Verdict(rejection.message)

    def would_admit(self, gang: GangView, nodes: Mapping[str, NodeInfo]) -> bool:
        """A dry run of admission for a waiting gang: nothing is reserved or remembered."""
        if gang.group is None or self._blocked(gang) is not None:
            return False
        return self.plan(gang, nodes)[1] is None

    def forget(self, key: str) -> None:
        """Drop what is remembered of a gang that waited (admitted now, or gone)."""
        self.waiting.pop(key, None)
        self.backoff_until.pop(key, None)

    def plan(
        self, gang: GangView, nodes: Mapping[str, NodeInfo]
    ) -> tuple[dict[str, Slot], Rejection | None]:
        """Slots for the members the gang still needs, or why they do not fit."""
        assert gang.group is not None
        spec, key = gang.group.spec, gang.key
        existing = gang.ready + len(gang.pending)
        if existing < spec.min_member:
            message = f"gang {key}: {existing}/{spec.min_member} pods of gang {key} exist"
            return {}, Rejection("NotEnoughPods", message)
        chosen, reason = _choose(gang)
        if reason is not None:
            return {}, reason
        reserved = self.reserved()
        if spec.min_resources:
            short = _min_resources_shortfall(gang, nodes, reserved)
            if short is not None:
                return {}, short
        assignment, failures = place(chosen, nodes, reserved)
        if failures:
            missing = sum(failures.values())
            why = ", ".join(sorted(failures))
            message = f"gang {key}: {missing} of {len(chosen)} members cannot be placed: {why}"
            return {}, Rejection("NotEnoughResources", message)
        requests = {pod.metadata.uid: pod.request for pod in chosen}
        return {uid: Slot(node, requests[uid]) for uid, node in assignment.items()}, None

    # -- changing ------------------------------------------------------------------------------

    def consume(self, uid: str) -> None:
        """A member is being bound: its slot turns into real usage on its node. An admission
        whose every slot is consumed has done its work and ends."""
        for key, admission in self.admissions.items():
            if admission.slots.pop(uid, None) is not None:
                admission.progress_at = self.clock()
                self.version += 1
                if not admission.slots:
                    del self.admissions[key]
                return

    def release(self, key: str, *, back_off: bool = False) -> None:
        if self.admissions.pop(key, None) is not None:
            self.version += 1
        if back_off:
            self.backoff_until[key] = self.clock() + self.settings.backoff
        for callback in self.on_released:
            callback(key)

    def expire(self) -> list[str]:
        """Release admissions that made no progress for `reservation_timeout`; their keys."""
        deadline = self.clock() - self.settings.reservation_timeout
        stale = [k for k, a in self.admissions.items() if a.progress_at < deadline]
        for key in stale:
            self.release(key, back_off=True)
        return stale

    def _admit(self, gang: GangView, slots: dict[str, Slot]) -> None:
        self.admissions[gang.key] = Admission(slots, self.clock())
        self.forget(gang.key)
        self.version += 1
        for callback in self.on_admitted:
            callback(gang.key)

    def _current(self, gang: GangView) -> Admission | None:
        """The gang's admission, brought up to the state: slots of members placed or gone are
        dropped; an admission that no longer covers the gang is released to be planned again."""
        admission = self.admissions.get(gang.key)
        if admission is None:
            return None
        pending = {pod.metadata.uid for pod in gang.pending}
        gone = [uid for uid in admission.slots if uid not in pending]
        for uid in gone:
            del admission.slots[uid]
        if gone:
            self.version += 1
        if gang.stands or gang.ready + len(admission.slots) < gang.min_member:
            self.release(gang.key)  # done, or lost members: plan again if it must wait
            return None
        return admission


def _choose(gang: GangView) -> tuple[list[Pod], Rejection | None]:
    """The pending members to plan: each task's shortfall first, then up to minMember."""
    assert gang.group is not None
    spec = gang.group.spec
    placed_per_task = gang.ready_per_task
    chosen: list[Pod] = []
    for task, wanted in sorted(spec.min_task_member.items()):
        need = wanted - placed_per_task[task]
        if need <= 0:
            continue
        of_task = [pod for pod in gang.pending if task_of(pod) == task]
        if len(of_task) < need:
            have = placed_per_task[task] + len(of_task)
            message = f"gang {gang.key}: task {task} has {have} of the {wanted} pods it needs"
            return [], Rejection("NotEnoughPodsOfTask", message)
        chosen.extend(of_task[:need])
    taken = {pod.metadata.uid for pod in chosen}
    rest = [pod for pod in gang.pending if pod.metadata.uid not in taken]
    chosen.extend(rest[: max(0, gang.min_member - gang.ready - len(chosen))])
    return chosen, None


def _min_resources_shortfall(
    gang: GangView, nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]
) -> Rejection | None:
    assert gang.group is not None
    needed = gang.group.spec.min_resources
    for pod in gang.placed:
        needed = needed - pod.request
    free = EMPTY
    for info in nodes.values():  # on the nodes some pending member may run on
        usable = any(pod.may_run_on(info.labels, info.taints, info.name) for pod in gang.pending)
        if usable and not info.unschedulable:
            free = free + _floor(info.free - reserved.get(info.name, EMPTY))
    short = needed.shortfall(free)
    if short is None:
        return None
    return Rejection(
        "MinResources",
        f"gang {gang.key}: minResources need {short} {format_units(needed[short], short)}, "
        f"{format_units(max(free[short], 0), short)} free on the nodes its pods may run on",
    )


def _floor(resources: Resources) -> Resources:
    return Resources({name: max(amount, 0) for name, amount in resources.items()})


def place(
    members: list[Pod], nodes: Mapping[str, NodeInfo], reserved: Mapping[str, Resources]
) -> tuple[dict[str, str], Counter[str]]:
    """First fit, largest member first, onto the fullest nodes first (binpack's preference),
    on nodes the member may run on (nodeSelector, required node affinity, taints).

    Returns member uid -> node, and per cause ("Insufficient cpu", or no node the member may
    run on) how many members found no node."""
    free = {
        info.name: info.free - reserved.get(info.name, EMPTY)
        for info in nodes.values()
        if not info.unschedulable
    }
    order = sorted(free, key=lambda name: (free[name][CPU], free[name][MEMORY], name))
    ranked = sorted(members, key=lambda p: (-p.request[CPU], -p.request[MEMORY], p.metadata.name))
    assignment: dict[str, str] = {}
    failures: Counter[str] = Counter()
    for pod in ranked:
        request = pod.request

        def allows(name: str, pod: Pod = pod) -> bool:
            return pod.may_run_on(nodes[name].labels, nodes[name].taints, name)

        # The cheap resource test first: the selector and affinity test runs on nodes with room.
        fit = next((n for n in order if request.shortfall(free[n]) is None and allows(n)), None)
        if fit is not None:
            assignment[pod.metadata.uid] = fit
            free[fit] = free[fit] - request
            continue
        allowed = [n for n in order if allows(n)]  # only to say why it failed
        if not allowed:
            failures["no node matches its nodeSelector, node affinity and tolerations"] += 1
            continue
        roomiest = max(allowed, key=lambda n: (free[n][CPU], free[n][MEMORY]))
        failures[f"Insufficient {request.shortfall(free[roomiest])}"] += 1
    return assignment, failures
