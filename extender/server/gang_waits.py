"""How long gangs wait, as the extender's metrics read it: which gangs wait and why
(`gang_waits`: the ledger's refused and never-judged gangs, once each, in their queue), for how
long, and which PodGroups were admitted and stood before (`GangHistory`).

How long a gang waits is a new Job's question (how long until it starts), so the two histograms
observe a PodGroup once: its first admission and its first stand, each from its creation. A gang
that waits again (a member evicted, its node lost, its Job restarted; an admission released by the
barrier's timeout) observes nothing more: from its creation that wait would read as the Job's whole
age, and its own start is not always known (a gang admitted at the first call about its
replacement pod was never seen waiting). A label telling first waits from later ones would split
every series, and the plain `sum by (le)` queries would mix the two. A wait again shows while it
lasts, in `lahar_gangs_waiting_oldest_seconds`: a gang that stood before is dated from when the
ledger saw this wait begin (its refusal's `since`, or when first seen pending), one that never
stood from its PodGroup's creation, however often it was admitted and released (so a gang that
backs off again and again still ages).

Which gangs were admitted and which stood is `GangHistory`'s: a bounded LRU by PodGroup UID, and
what it forgot, or a restart emptied, is read from the cluster: a gang with a member bound or
finished has stood before. So across a restart a gang that ran before and waits again is still
dated from this wait (from when this process first saw it, not before), and its next admission
and stand observe nothing; only a gang none of whose pods are left bound or finished (a Job
restarted whole) reads as new: its wait from its creation, its admission and stand observed again.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachetools import LRUCache

from extender.api.scheduling import PodGroup
from extender.api.times import parse_time
from extender.cache.state import ClusterState
from extender.framework.engine import Cause, Engine, GangView, view_gang

# The cause of a gang that waits for a turn the fair order has for it, but was never judged:
# the scheduler has not asked about it yet (or, behind Lahar's gate, no walk reached it).
NOT_ASKED_YET = "NotAskedYet"
# PodGroups `GangHistory` remembers, the most recently admitted or standing (an entry is a UID
# and a word, some hundred bytes: a few MB in all); one it forgot is judged by its pods.
HISTORY_SIZE = 16384


def since_made(group: PodGroup, now: float) -> float | None:
    """Seconds from the group's creationTimestamp to `now` (wall clock; 0 when the clocks
    disagree the other way), None when it has none."""
    made = parse_time(group.metadata.creation_timestamp)
    return None if made is None else max(now - made, 0.0)


class GangHistory:
    """Which gangs this extender saw admitted, and which stood, by PodGroup UID (its key when it
    has none): their first admission and first stand are timed, and a gang that stood before is
    dated, while it waits again, from when that wait began. A bounded LRU (`HISTORY_SIZE`);
    what it does not know is read from the gang's pods: a member bound or finished means it
    stood before (members bind only once their gang stands)."""

    _ADMITTED, _STOOD = "admitted", "stood"

    def __init__(self, size: int = HISTORY_SIZE) -> None:
        self._seen: LRUCache[str, str] = LRUCache(maxsize=size)

    def first_admission(self, gang: GangView) -> bool:
        """The gang was admitted: whether for the first time (neither admitted nor stood
        before, as remembered or as its pods show); remembered."""
        name = _identity(gang)
        if name in self._seen:
            self._seen[name] = self._seen[name]  # (used: kept longer)
            return False
        self._seen[name] = self._STOOD if _ran(gang) else self._ADMITTED
        return self._seen[name] == self._ADMITTED

    def first_stand(self, gang: GangView) -> bool:
        """The gang's minMember-th member was bound: whether it stands for the first time after
        a first admission this extender saw (not after a restart in between); remembered."""
        name = _identity(gang)
        first = self._seen.get(name) == self._ADMITTED
        self._seen[name] = self._STOOD
        return first

    def stood_before(self, gang: GangView) -> bool:
        """Whether the gang stood before, as remembered or as its pods show."""
        return self._seen.get(_identity(gang)) == self._STOOD or _ran(gang)


def _identity(gang: GangView) -> str:
    uid = gang.group.metadata.uid if gang.group is not None else ""
    return uid or gang.key


def _ran(gang: GangView) -> bool:
    """Whether a member of the gang is bound to a node or finished (not merely assumed at the
    bind barrier)."""
    return bool(gang.succeeded or gang.failed or any(pod.spec.node_name for pod in gang.placed))


@dataclass(frozen=True)
class Wait:
    """A gang waiting for admission: its queue, the cause of its latest rejection, and how long
    it has waited."""

    queue: str
    cause: str
    seconds: float


def gang_waits(state: ClusterState, engine: Engine, now: float, history: GangHistory) -> list[Wait]:
    """Every gang waiting for admission, once each: those refused (by the cause of their latest
    rejection) and those the fair order has a turn for that were never judged
    (`NOT_ASKED_YET`), in its queue. The ledger's lists are as of its last walk: a gang with
    nothing pending any more, or whose PodGroup was deleted (it waits for none unless it never
    had one: `NoPodGroup`), is left out before the next walk drops it.

    A gang that stood before (`history`) has waited since the ledger saw this wait begin (its
    clock's time, read back against `now`, the wall clock); any other since its PodGroup was made,
    or since the ledger first saw it wait when that is longer (its pods came first) or the
    PodGroup says nothing."""
    ticks = engine.clock()
    found: dict[str, tuple[float, str]] = {}
    for key in engine.refused():
        refusal = engine.refusal(key)
        if refusal is not None:
            found[key] = (refusal.since, str(refusal.rejection.cause))
    for key, since in engine.unasked().items():
        found.setdefault(key, (since, NOT_ASKED_YET))
    waits = []
    for key, (since, cause) in found.items():
        gang = view_gang(state, key)
        if not gang.pending or (gang.group is None and cause != Cause.NO_POD_GROUP):
            continue
        seconds = max(ticks - since, 0.0)  # this wait, as the ledger saw it
        if gang.group is not None and not history.stood_before(gang):
            seconds = max(seconds, since_made(gang.group, now) or 0.0)
        waits.append(Wait(gang.queue, cause, seconds))
    return waits
