"""The capacity admitted gangs reserve: each admission's slots, and what they add up to.

An admitted gang reserves one slot (a node and a request) for each of its members planned and not
yet bound. Filter calls read the sum per node (capacity other pods may not have), the queues read
the sum per gang (what a queue's gangs reserve); both are kept a slot at a time as slots come and
go, never recounted over every admission. `version` moves with every change: what was decided on the
reservations (a walk of the fair order, a preemption pass) stands while it does not. Pure: the
ledger (`gangs.ledger`) decides when to admit, consume and release; this only keeps the books.
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView, Mapping
from dataclasses import dataclass

from extender.api.resources import EMPTY, Resources
from extender.gangs.placement import Slot


@dataclass
class Admission:
    slots: dict[str, Slot]  # member uid -> its reserved place, until the member is bound
    progress_at: float
    admitted_at: float


class Reservations:
    def __init__(self) -> None:
        self._admissions: dict[str, Admission] = {}
        self._by_node: dict[str, Resources] = {}
        self._by_gang: dict[str, Resources] = {}
        self.version = 0

    # -- reading -------------------------------------------------------------------------------

    def get(self, key: str) -> Admission | None:
        return self._admissions.get(key)

    def keys(self) -> KeysView[str]:
        """The admitted gangs."""
        return self._admissions.keys()

    def by_node(self) -> Mapping[str, Resources]:
        """Per node, the capacity the unconsumed slots reserve there."""
        return self._by_node

    def by_gang(self) -> Mapping[str, Resources]:
        """Per admitted gang, the capacity its unconsumed slots reserve."""
        return self._by_gang

    def in_flight(self) -> int:
        """Members of admitted gangs not at the bind barrier yet: the unconsumed slots."""
        return sum(len(admission.slots) for admission in self._admissions.values())

    def idle_since(self, deadline: float) -> list[str]:
        """The admitted gangs that made no progress since `deadline`."""
        return [k for k, a in self._admissions.items() if a.progress_at < deadline]

    def progress_times(self) -> list[float]:
        """When each admission last made progress."""
        return [admission.progress_at for admission in self._admissions.values()]

    # -- changing ------------------------------------------------------------------------------

    def admit(self, key: str, slots: dict[str, Slot], now: float) -> None:
        """Gang `key` reserves `slots` from `now`, instead of whatever it reserved before."""
        previous = self._admissions.get(key)
        if previous is not None:
            self._tally(key, previous.slots.values(), more=False)
        self._admissions[key] = Admission(slots, now, now)
        self._tally(key, slots.values(), more=True)

    def release(self, key: str) -> None:
        """Gang `key` reserves nothing any more."""
        admission = self._admissions.pop(key, None)
        if admission is not None:
            self._tally(key, admission.slots.values(), more=False)

    def consume(self, uid: str, node: str | None, now: float) -> tuple[str | None, Slot | None]:
        """A member is being bound (on `node`): a slot of its gang turns into real usage. Its
        own, when on that node; else a slot of its gang planned there for a member asking the
        same, whose member then takes the binding member's own slot (the filter offered the
        node on that credit); else its own, wherever it was (the member found room nobody
        reserved). An admission whose every slot is consumed has done its work and ends: then its
        gang's key (None otherwise, and for a pod that has no slot)."""
        for key, admission in self._admissions.items():
            slots = admission.slots
            own = slots.get(uid)
            if own is None:
                continue
            taken = own
            if node is not None and own.node != node:
                other = next(
                    (
                        member
                        for member, slot in slots.items()
                        if slot.node == node
                        and slot.request == own.request
                        and slot.within is own.within
                        and member != uid
                    ),
                    None,
                )
                if other is not None:
                    taken, slots[other] = slots[other], own
            del slots[uid]
            admission.progress_at = now
            self._tally(key, [taken], more=False)
            if not slots:
                del self._admissions[key]
                return key, taken
            return None, taken
        return None, None

    def restore(self, key: str, slots: Mapping[str, Slot], now: float) -> bool:
        """`slots` of gang `key` are reserved again; whether its admission began anew (every
        slot had been consumed, so it had ended)."""
        admission = self._admissions.get(key)
        anew = admission is None
        if admission is None:
            admission = self._admissions[key] = Admission({}, now, now)
        self._tally(key, [s for uid, s in slots.items() if uid not in admission.slots], more=True)
        admission.slots.update(slots)
        return anew

    def hand_over(self, key: str, moved: Mapping[str, str]) -> None:
        """Gang `key`'s slots reserved for members not created yet go to the pods created for them
        (`moved`: the expected uid -> the pod's uid); what the gang reserves does not change."""
        slots = self._admissions[key].slots
        for old, new in moved.items():
            slots[new] = slots.pop(old)

    def drop(self, key: str, uids: Iterable[str]) -> None:
        """The slots of gang `key`'s members `uids` (placed, or gone) reserve nothing any more."""
        admission = self._admissions[key]
        self._tally(key, [admission.slots.pop(uid) for uid in uids], more=False)

    def _tally(self, key: str, slots: Iterable[Slot], *, more: bool) -> None:
        """Gang `key`'s reservation grows (`more`) or shrinks by `slots`: the tallies follow,
        one slot at a time, and the version moves."""
        for slot in slots:
            for tally, name in ((self._by_node, slot.node), (self._by_gang, key)):
                before = tally.get(name, EMPTY)
                after = before + slot.request if more else before - slot.request
                if after:
                    tally[name] = after
                else:
                    tally.pop(name, None)
        self.version += 1
