"""Gang admission: a gang's members get nodes only when all it still needs fit at once.

`Gangs` is the ledger of the gangs it admitted (what they reserve: `gangs.reservations`), refused or
backed off. A gang (the pods naming one PodGroup) is *admitted* when a placement plan for its
unplaced members up to `minMember` (and each task's `minTaskMember`; `minResources` when set) fits
the capacity left after the reservations of gangs admitted before it and the claims of the waiting
gangs ahead of it in the fair order (`gangs.order`, walked once per cluster change, and for a filter
call only as far as the gang asked about: the turns after it cannot change its turn). The plan's
slots are then *reserved*: other pods are filtered away from that capacity, and a member may use its
own slot or any capacity nobody reserved. A slot is consumed when its member is bound (or assumed at
the bind barrier); the admission ends when the gang stands (`minMember` placed), is released by the
barrier's timeout (then the gang backs off), or makes no progress for `reservation_timeout` seconds.
A waiting gang the order lets in but that never comes for its capacity within that time backs off
too, so it cannot block the gangs behind it.

A Volcano Job's gang is admitted before its pods exist (`cache.expected`): its slots are reserved
for the pods its controller creates once the PodGroup shows the admission, and each created pod
takes over the slot of its name (`_hand_over`).

A refused gang is remembered with the order it was refused in, so the other members asked about
while that order stands get the same answer at once.

`Gangs` holds the records and the commands that change them: the admissions (`admit_ahead`,
`consume`, `restore`, `release`, `expire`), the refusals and backoffs, the callbacks. The fair
order's walks, and what goes from one walk to the next (the contenders and their lineup, the
nodes' room, where starving gangs drain, since when gangs let in have not come), are kept by
`gangs.walks.Walks`, which the ledger owns and drives: it says when a walk no longer stands
(`drop`) and what changed of a gang (`touch`, `forget`), and the walks read its records through
its reading methods (`contending.Records`), not its fields. Pure: no I/O, the clock is handed
in; callbacks tell the server whom to wake.
"""

from __future__ import annotations

import time
from collections.abc import Callable, KeysView, Mapping
from dataclasses import dataclass, field, replace

from extender.api.engine_settings import GangSettings, Ordering
from extender.api.job_pods import expected_name, is_expected
from extender.api.objects import Pod
from extender.api.resources import Resources
from extender.api.scheduling import gang_key
from extender.cache.events import Events
from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.gangs.events import GangAdmitted, GangRejected, GangReleased
from extender.gangs.hyper_placement import staying_inside
from extender.gangs.lineup import Ranking
from extender.gangs.members import (
    GangView,
    Marked,
    gang_priority,
    held,
    parked,
    refusal_before_plan,
    view_gang,
)
from extender.gangs.order import Order
from extender.gangs.placement import Room, Slot, plan_slots
from extender.gangs.queues import QueueTally, QueueView, account, capped_above
from extender.gangs.refusals import Refusal, Rejection, backoff_refusal
from extender.gangs.reservations import Admission, Reservations
from extender.gangs.scale_up import ScaleUps
from extender.gangs.walks import Walks


@dataclass(frozen=True)
class Verdict:
    """For one pod: no `refusal` = go on (plain fit, minus reservations); else fail every node.
    The refusal's words (`reason`) are worked out when read: a caller that needs only to know
    (the simulator's scheduler) does not pay for them.

    `credit` is, per node, the reservation of the pod's own gang it may take there: its own
    slot's, and on other nodes a slot of its gang planned for a member asking the same (the
    member binding there takes that slot and leaves its own to the other), so the pod may go to
    any node the scheduler offers that has room once the other gangs' reservations are kept.

    `inside`: the only nodes the pod may go to (None: any), those of the HyperNode its gang's
    network topology keeps it in (`gangs.topology`)."""

    refusal: Rejection | None = None
    credit: Mapping[str, Resources] = field(default_factory=dict)
    inside: frozenset[str] | None = None

    @property
    def reason(self) -> str | None:
        """Why every node fails the pod, in words (None: it goes on)."""
        return None if self.refusal is None else self.refusal.message


PLAIN = Verdict()


@dataclass
class Gangs:
    settings: GangSettings = field(default_factory=GangSettings)
    clock: Callable[[], float] = time.monotonic
    ordering: Ordering = field(default_factory=Ordering)
    _reservations: Reservations = field(default_factory=Reservations)
    _backoff_until: dict[str, float] = field(default_factory=dict)
    _waiting: dict[str, Refusal] = field(default_factory=dict)  # refused gangs
    # Where the ledger says what it decided (`gangs.events`): the process's one hub.
    events: Events = field(default_factory=Events)
    _queues: tuple[tuple[int, ...], dict[str, QueueView]] | None = None
    _queue_tally: QueueTally = field(default_factory=QueueTally)
    # Scheduler names of the pods Lahar was asked about: gangs of those schedulers contend.
    schedulers: set[str] = field(default_factory=set)
    _held: Marked = field(default_factory=lambda: Marked(held))  # members Lahar's gate holds
    _parked: Marked = field(default_factory=lambda: Marked(parked))  # members the scheduler parked
    _walks: Walks = field(default_factory=Walks)  # the fair order's walks, and what they keep
    scale_ups: ScaleUps = field(init=False)  # what was asked of the autoscaler, per gang

    def __post_init__(self) -> None:
        self.scale_ups = ScaleUps(self.settings.scale_up)

    # -- reading -------------------------------------------------------------------------------

    def admission(self, key: str) -> Admission | None:
        """The gang's admission: the slots reserved for its unbound members (None: not
        admitted)."""
        return self._reservations.get(key)

    def admitted(self) -> KeysView[str]:
        """The keys of the admitted gangs."""
        return self._reservations.keys()

    def refusal(self, key: str) -> Refusal | None:
        """Why and since when the gang waits, when it was refused (None: it was not): its words
        worked out now if they were not yet (a verdict keeps them unworked until read)."""
        found = self._waiting.get(key)
        if found is not None and type(found.rejection) is not Rejection:
            found = self._waiting[key] = replace(found, rejection=found.rejection.settled())
        return found

    def holds(self, key: str) -> bool:
        """Whether Lahar's gate holds members of gang `key` (as last seen): the scheduler cannot
        ask about them, Lahar answers for the gang (`let_in`)."""
        return key in self._held

    def shown(self, key: str) -> bool:
        """Whether gang `key` was refused for want of capacity in a queue whose scale-up mode is
        `unschedulable`: its gate is lifted so that the scheduler marks its members
        Unschedulable and an autoscaler adds nodes for them (it is not admitted)."""
        return key in self.scale_ups.shown

    def refused(self) -> KeysView[str]:
        """The keys of the gangs refused and waiting."""
        return self._waiting.keys()

    def unasked(self) -> dict[str, float]:
        """The gangs the last walk lined up that were neither refused nor admitted: the
        scheduler has not asked about them yet (or, held by Lahar's gate, no walk reached them).
        Since when each was first seen (the clock's time). As of the last walk, as `refused` is:
        a gang deleted since is still here until the next one."""
        return self._walks.unasked(self._waiting.keys(), self._reservations.keys())

    def backoff_ends(self, key: str) -> float | None:
        """When the gang's backoff ends (the clock's time; None: it was not backed off)."""
        return self._backoff_until.get(key)

    def moments(self, now: float, *, backoffs: bool = True) -> list[float]:
        """The times after `now` at which the ledger moves with no cluster event: a backoff ends
        (with `backoffs`), an admission making no progress times out."""
        timeout = self.settings.reservation_timeout
        found = [t for t in self._backoff_until.values() if t > now] if backoffs else []
        found += [t + timeout for t in self._reservations.progress_times()]
        return [t for t in found if t > now]

    def reserved(self) -> Mapping[str, Resources]:
        """Per node, the capacity admitted gangs' unconsumed slots reserve."""
        return self._reservations.by_node()

    def reserved_by_gang(self) -> Mapping[str, Resources]:
        """Per admitted gang, the capacity its unconsumed slots reserve."""
        return self._reservations.by_gang()

    @property
    def version(self) -> int:
        """Moves with every change to the reservations."""
        return self._reservations.version

    def queues(self, state: ClusterState) -> dict[str, QueueView]:
        """Every queue's figures (`gangs.queues.account`), computed once per cluster change
        and admission; reading them changes nothing (metrics and the queue writer read them)."""
        key = self._state_key(state)
        if self._queues is None or self._queues[0] != key:
            self._queues = (key, account(state, self.reserved_by_gang(), self._queue_tally))
        return self._queues[1]

    # -- deciding ------------------------------------------------------------------------------

    def serve(self, scheduler: str) -> None:
        """A scheduler of this name asks Lahar: the pending gangs of its pods contend in the fair
        order even before it asks about them."""
        if scheduler not in self.schedulers:
            self.schedulers.add(scheduler)
            self._walks.drop()

    def verdict(self, state: ClusterState, nodes: Mapping[str, NodeInfo], pod: Pod) -> Verdict:
        """What the gang rules say about filtering `pod` now (admitting its gang if it can)."""
        key = gang_key(pod)
        if key is None:
            return PLAIN
        waiting = self._waiting.get(key)
        current = self._walks.current(self._state_key(state), self.clock())
        if waiting is not None and current is not None and waiting.refused_in == current.number:
            return Verdict(waiting.rejection)  # refused in this very order already
        gang = view_gang(state, key)
        going = self._admitted_or_standing(state, nodes, gang, pod)
        if going is not None:
            return going
        blocked = self.blocked(gang)
        if blocked is not None:
            return self._reject(key, blocked, None)
        order = self._walked(state, nodes, asking=gang)
        self._walks.take(order, self.clock(), until=key)  # the turns after it cannot change it
        turn = order.turns[key]
        if turn.rejection is not None:
            return self._reject(key, turn.rejection, order.number)
        self._admit(gang, turn.slots)
        # The walk already counted these slots as claimed: every other turn stands as it was.
        self._walks.keep(order, self._state_key(state))
        own = turn.slots.get(pod.metadata.uid)
        inside = own.within if own is not None else staying_inside(gang, pod, turn.slots)
        return Verdict(credit=_credit(turn.slots, pod.metadata.uid), inside=inside)

    def _admitted_or_standing(
        self, state: ClusterState, nodes: Mapping[str, NodeInfo], gang: GangView, pod: Pod
    ) -> Verdict | None:
        """The verdict for a member of a gang admitted or standing (None for any other gang): its
        own slot, or plain fit for a member beyond the plan, within its queue's capability."""
        admission = self._current(gang) if gang.group is not None else None
        if admission is None and not (gang.group is not None and gang.stands):
            return None
        slot = admission.slots.get(pod.metadata.uid) if admission is not None else None
        capped = slot is None and capped_above(state.queues, gang.queue)
        view = self.queues(state).get(gang.queue) if capped else None
        if view is not None:
            refusal = view.capability_refusal(gang.key, pod.request)
            if refusal is not None:
                return Verdict(refusal)
        if admission is None or slot is None:
            inside = staying_inside(gang, pod, admission.slots if admission else None)
            return PLAIN if inside is None else Verdict(inside=inside)
        return Verdict(credit=_credit(admission.slots, pod.metadata.uid), inside=slot.within)

    def order(
        self, state: ClusterState, nodes: Mapping[str, NodeInfo], asking: GangView | None = None
    ) -> Order:
        """The fair order of the waiting gangs (and `asking`), every turn taken; walked again
        only when the state, the ledger or the clock moved it."""
        order = self._walked(state, nodes, asking)
        self._walks.take(order, self.clock())
        return order

    def _walked(
        self, state: ClusterState, nodes: Mapping[str, NodeInfo], asking: GangView | None = None
    ) -> Order:
        """The current walk (and `asking` in it), its turns taken as far as they were; or a new
        one, from the ledger's records as they stand."""
        made_at = self._state_key(state)
        current = self._walks.current(made_at, self.clock())
        if current is not None and (asking is None or asking.key in current.contenders):
            return current
        now = self.clock()
        queues = self.queues(state)
        total = state.capacity()
        ranking = Ranking(self.ordering, now, total, lambda gang: gang_priority(state, gang))
        finished = self._walks.line_up(
            state,
            queues,
            ranking,
            asking=asking,
            records=self,
            backoff=self.settings.backoff,
            schedulers=frozenset(self.schedulers),
            timeout=self.settings.reservation_timeout,
        )
        for key in finished:  # refused before, nothing of it waits any more
            self.forget(key)
        # Valid until a backoff ends or a contender's standing moves with the clock. (Backoffs
        # over are dropped here: gangs that backed off once and then ended would pile up.)
        over = [key for key, until in self._backoff_until.items() if until <= now]
        for key in over:
            del self._backoff_until[key]
        return self._walks.walk(
            state.view(),
            nodes,
            queues,
            self.reserved(),
            self.ordering,
            made_at=made_at,
            now=now,
            backoffs=self._backoff_until.values(),
        )

    def admissible(self, state: ClusterState, nodes: Mapping[str, NodeInfo]) -> list[str]:
        """The parked gangs the fair order would admit now, in that order (nothing reserved):
        refused by Lahar, or never asked about because the scheduler found no node before it
        (not those Lahar's gate holds: `let_in` answers for them). Of those Lahar refused, a
        refusal for a new cause is remembered, as if the scheduler had asked. The walk goes only
        as far as the last of them, and not at all when there is none."""
        wanted = {k for k in self._waiting if k not in self._held} | set(self._parked.keys(state))
        wanted -= self._reservations.keys()
        found: list[str] = []
        if not wanted:
            return found
        order = self._walked(state, nodes)
        for key, turn in self._walks.lazily(order, self.clock()):
            if key in wanted:
                wanted.discard(key)
                if turn.slots:
                    found.append(key)
                elif turn.rejection is not None and key in self._waiting:
                    self.refused_anew(key, turn.rejection, order.number)
                if not wanted:
                    break
        return found

    def _state_key(self, state: ClusterState) -> tuple[int, ...]:
        return (*state.stamp, self.version)

    def backing_off(self, key: str) -> Rejection | None:
        """Why the gang waits while it backs off (None: it does not)."""
        until = self._backoff_until.get(key)
        return backoff_refusal(key, until, self.clock(), self.settings.backoff)

    def admit_ahead(
        self, state: ClusterState, nodes: Mapping[str, NodeInfo], gang: GangView
    ) -> Rejection | None:
        """Admit `gang` ahead of every other one: planned on the capacity admitted gangs leave,
        whatever the fair order says (a gang found partly bound after a restart completes
        first: its bound members take capacity that serves nobody until it stands). Why not,
        when it does not fit (None: admitted)."""
        refusal = self.blocked(gang)
        if refusal is not None:
            return refusal
        slots, refusal = plan_slots(gang, Room(nodes, self.reserved()))
        if refusal is not None:
            return refusal
        self._admit(gang, slots)
        self._walks.drop()  # it claimed capacity the last walk gave others
        return None

    def blocked(self, gang: GangView) -> Rejection | None:
        """Why the gang waits before any plan: no PodGroup, or backing off (None: neither)."""
        until = self._backoff_until.get(gang.key)
        return refusal_before_plan(gang, until, self.clock(), self.settings.backoff)

    def _reject(self, key: str, rejection: Rejection, refused_in: int | None) -> Verdict:
        """Remember why the gang waits; tell listeners when it is rejected anew or for a new
        cause (not once per member asked, nor when only the figures in the message moved)."""
        previous = self._waiting.get(key)
        if previous is not None:
            since = previous.since
        else:
            seen = self._walks.first_seen(key)
            since = seen if seen is not None else self.clock()
        self._waiting[key] = Refusal(since, rejection, refused_in)
        if previous is None:
            self._walks.touch(key)
        # A new contender the order does not know may change the others' turns; one refused
        # before any plan (refused_in None) claims nothing, so it changes none.
        if previous is None and refused_in is not None and not self._walks.knows(key):
            self._walks.drop()
        if previous is None or previous.rejection.cause != rejection.cause:
            self.events.publish(GangRejected(key, rejection))
        return Verdict(rejection)

    def refused_anew(self, key: str, rejection: Rejection, refused_in: int) -> None:
        """Remember the walk's refusal (walk number `refused_in`) of a gang nobody asked about,
        when it is new or for a new cause (a queue deleted under a gang that waited for room):
        its PodGroup and `explain` say why it waits now, not why it waited before."""
        previous = self._waiting.get(key)
        if previous is None or previous.rejection.cause != rejection.cause:
            self._reject(key, rejection.settled(), refused_in)

    def forget(self, key: str) -> None:
        """Drop what is remembered of a gang that waited (admitted now, or gone)."""
        if self._waiting.pop(key, None) is not None:
            self._walks.drop()  # one contender fewer: the others' turns may change
        self._backoff_until.pop(key, None)
        self._walks.forget(key)
        self.scale_ups.shown.discard(key)

    # -- changing ------------------------------------------------------------------------------

    def consume(self, uid: str, node: str | None = None) -> Slot | None:
        """A member is being bound (on `node`): a slot of its gang turns into real usage
        (`Reservations.consume`); the slot it took (None: it had none). An admission whose
        every slot is consumed ends."""
        ended, taken = self._reservations.consume(uid, node, self.clock())
        if ended is not None:
            self._walks.touch(ended)
        return taken

    def restore(self, key: str, slots: Mapping[str, Slot]) -> None:
        """Members of an admitted gang left the bind barrier without binding, to be placed again
        (`actions.barrier`'s patience): their slots are reserved again, where their assumptions
        counted them until now, so nobody can have taken them."""
        if self._reservations.restore(key, slots, self.clock()):  # (it had ended: all consumed)
            self._walks.touch(key)

    def in_flight(self) -> int:
        """Members of admitted gangs not at the bind barrier yet: their unconsumed slots."""
        return self._reservations.in_flight()

    def admitted_at(self, key: str) -> float | None:
        """When the gang was admitted (the clock's time); None when it is not."""
        admission = self._reservations.get(key)
        return admission.admitted_at if admission is not None else None

    def let_in(self, state: ClusterState, nodes: Mapping[str, NodeInfo]) -> list[str]:
        """Answer for the gangs whose members Lahar's scheduling gate holds, as a filter call
        answers for a gang the scheduler asks about: admit, in the fair order, the ones whose
        turn fits, while the members of admitted gangs not yet at the bind barrier stay within
        `max_pods_in_flight` (the first gang always, when none is in flight: a gang larger than
        the bound still goes alone), and remember the refusal of each held gang the walk reaches
        before that (so preemption, the PodGroup status and explain read it as if the scheduler
        had asked). The walk goes only as far as that: while the bound is reached, not at all.
        The keys of the gangs whose held members may go now: those just admitted, those
        admitted before (at a filter call, or before their gate came off), and those that stand
        (their members beyond minMember)."""
        keys = self._held.keys(state)
        if not keys:
            return []
        limit = self.settings.max_pods_in_flight
        in_flight = self.in_flight()
        going: dict[str, None] = {}
        if in_flight < limit:
            order = self._walked(state, nodes)
            for key, turn in self._walks.lazily(order, self.clock()):
                if key not in self._held:
                    continue
                if turn.rejection is not None:
                    self.refused_anew(key, turn.rejection, order.number)
                    continue
                if not turn.slots:
                    continue
                if in_flight and in_flight + len(turn.slots) > limit:
                    break  # the rest waits: nobody passes a gang that does not fit now
                self._admit(view_gang(state, key), turn.slots)
                in_flight += len(turn.slots)
                going[key] = None
            if going:  # the walk counted their slots as claimed: every other turn stands
                self._walks.keep(order, self._state_key(state))
        for key in keys:
            admitted = self._reservations.get(key) is not None
            if admitted or key in self.scale_ups.shown or view_gang(state, key).stands:
                going[key] = None
        return list(going)

    def holding(self, state: ClusterState) -> bool:
        """Whether Lahar's gate holds members of some gang."""
        return bool(self._held.keys(state))

    def release(self, key: str, *, back_off: bool = False) -> None:
        self._walks.touch(key)
        self._reservations.release(key)
        if back_off:
            self._backoff_until[key] = self.clock() + self.settings.backoff
            self._walks.drop()  # the order may have let it in: it no longer may
        self.events.publish(GangReleased(key))

    def expire(self) -> list[str]:
        """Release admissions that made no progress for `reservation_timeout`, and back off
        waiting gangs the order let in that did not come for their capacity in that time (so
        they stop blocking the gangs behind them); their keys."""
        deadline = self.clock() - self.settings.reservation_timeout
        stale = self._reservations.idle_since(deadline)
        stale += self._walks.unclaimed(deadline)
        for key in stale:
            self._walks.stop_awaiting(key)
            self.release(key, back_off=True)
        return stale

    def _admit(self, gang: GangView, slots: dict[str, Slot]) -> None:
        self._reservations.admit(gang.key, slots, self.clock())
        self.forget(gang.key)  # (which has the order look at it again)
        self.events.publish(GangAdmitted(gang.key))

    def _current(self, gang: GangView) -> Admission | None:
        """The gang's admission, brought up to the state: slots of members placed or gone are
        dropped; an admission that no longer covers the gang is released to be planned again."""
        admission = self._reservations.get(gang.key)
        if admission is None:
            return None
        pending = {pod.metadata.uid for pod in gang.pending}
        gone = [uid for uid in admission.slots if uid not in pending]
        if gone:
            gone = self._hand_over(gang, admission, gone)
        if gone:
            self._reservations.drop(gang.key, gone)
        if gang.stands or gang.ready + len(admission.slots) < gang.min_member:
            self.release(gang.key)  # done, or lost members: plan again if it must wait
            return None
        return admission

    def _hand_over(self, gang: GangView, admission: Admission, gone: list[str]) -> list[str]:
        """The slots admitted for pods not created yet go to the pending pods created since
        under their names (`api.job_pods`); the uids of the slots still gone."""
        expected = {expected_name(uid): uid for uid in gone if is_expected(uid)}
        if not expected:
            return gone
        moved = {
            expected[pod.metadata.name]: pod.metadata.uid
            for pod in gang.pending
            if pod.metadata.name in expected and pod.metadata.uid not in admission.slots
        }
        if moved:
            self._reservations.hand_over(gang.key, moved)
        return [uid for uid in gone if uid not in moved]


def _credit(slots: Mapping[str, Slot], uid: str) -> dict[str, Resources]:
    """Per node, the reservation of its gang member `uid` may take there (`Verdict.credit`): its
    own slot, and a slot of the gang's for a member asking the same, to stay in the same
    HyperNode, on each other node."""
    own = slots.get(uid)
    if own is None:
        return {}
    credit = {
        slot.node: slot.request
        for slot in slots.values()
        if slot.request == own.request and slot.within is own.within
    }
    credit[own.node] = own.request
    return credit
