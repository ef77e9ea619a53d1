"""A gang as the cluster state shows it now, and what refuses it before any plan.

`view_gang` sorts a gang's pods into placed (counted on a node: bound, or assumed by Lahar's bind),
pending, succeeded and failed; `GangView` answers the gang rules' questions about them (how many
are ready, does the gang stand, which pending members a plan places) and `gang_priority` its
priority. A view's `Memo` keeps what layers above work out from it, each value in a typed `MemoSlot`
its reader declares (the view lives until the gang changes, and so does what is kept with it).
`refusal_before_plan` says what refuses a gang whatever the room: no PodGroup, one Lahar cannot
take as it is, a backoff (the refusal itself is a value of `gangs.refusals`). Pure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar, cast
from weakref import WeakKeyDictionary

from extender.api.objects import Pod, Toleration
from extender.api.resources import CPU, EMPTY, MEMORY, Resources
from extender.api.scheduling import (
    DEFAULT_QUEUE,
    GroupKind,
    PodGroup,
    held_by_lahar,
    naming_conflict,
    task_of,
)
from extender.cache.state import ClusterState
from extender.gangs.refusals import Cause, Rejection, backoff_refusal
from extender.gangs.topology import Reach, Topology, reach_of

T = TypeVar("T")
NATIVE = GroupKind.NATIVE


class MemoSlot(Generic[T]):
    """A place in a `Memo` for one kind of value, declared by the reader that keeps it there
    (its type is what the memo hands back). Slots are told apart by identity, not by name. A value
    must not hold the cluster state: the views, and what is kept with them, live as long as it."""

    def __init__(self, name: str) -> None:
        self.name = name  # (for reading a memo in a debugger)

    def __repr__(self) -> str:
        return f"MemoSlot({self.name!r})"


class Memo:
    """What readers worked out from one gang view, each value in its reader's `MemoSlot`."""

    def __init__(self) -> None:
        self._values: dict[MemoSlot[Any], Any] = {}

    def get(self, slot: MemoSlot[T]) -> T | None:
        return cast("T | None", self._values.get(slot))

    def put(self, slot: MemoSlot[T], value: T) -> None:
        self._values[slot] = value


@dataclass(frozen=True)
class GangView:
    """One gang as the cluster state shows it now."""

    key: str
    group: PodGroup | None
    placed: list[Pod]  # counted on a node (bound, or assumed by Lahar's bind)
    succeeded: list[Pod]
    pending: list[Pod]  # unplaced, not finished, not being deleted
    failed: list[Pod] = field(default_factory=list)
    arrival: int = 0  # the order in which the cache first saw it (`ClusterState.arrivals`)
    # What its networkTopology and partitions ask of its placement (None: nothing).
    reach: Reach | None = field(default=None, compare=False)
    # What readers worked out from this view and more of the state that changes only with the
    # gang (its members' nodes, whether they are assumed), kept with the view, in their slots.
    memo: Memo = field(default_factory=Memo, compare=False, repr=False)

    @cached_property
    def staying(self) -> list[Pod]:
        """Its placed members not being deleted (an evicted one still uses its node, but the
        gang no longer stands on it: its replacement waits its turn in the fair order)."""
        return [pod for pod in self.placed if pod.metadata.deletion_timestamp is None]

    @property
    def ready(self) -> int:
        return len(self.staying) + len(self.succeeded)

    @cached_property
    def ready_per_task(self) -> Counter[str]:
        return Counter(task_of(pod) for pod in self.staying + self.succeeded)

    @property
    def min_member(self) -> int:
        return self.group.spec.min_member if self.group is not None else 1

    @cached_property
    def queue(self) -> str:
        return self.group.queue if self.group is not None else DEFAULT_QUEUE

    @cached_property
    def asking_schedulers(self) -> frozenset[str]:
        """The schedulers its pending members name that may schedule them now, or once Lahar
        lifts its gate (not held by anyone else's scheduling gate)."""
        return frozenset(
            pod.spec.scheduler_name
            for pod in self.pending
            if not pod.spec.scheduling_gates or held_by_lahar(pod)
        )

    @cached_property
    def held(self) -> list[Pod]:
        """Its pending members that wait for Lahar to lift its gate (`held_by_lahar`): the
        scheduler cannot ask about them, so Lahar answers for the gang by itself."""
        return [pod for pod in self.pending if held_by_lahar(pod)]

    @cached_property
    def allocated(self) -> Resources:
        """What its placed members use on their nodes."""
        return sum((pod.request for pod in self.placed), EMPTY)

    @cached_property
    def demand(self) -> Resources:
        """What its pending members ask for."""
        return sum((pod.request for pod in self.pending), EMPTY)

    @cached_property
    def highest_priority(self) -> int:
        """Of its pending and placed members, the highest priority (0 when none)."""
        return max((pod.spec.priority for pod in self.pending + self.placed), default=0)

    @cached_property
    def stands(self) -> bool:
        """minMember members ready, and each task's minTaskMember of them."""
        return self._enough(self.ready, self.ready_per_task)

    @cached_property
    def runs_whole(self) -> bool:
        """As `stands`, counting members being deleted too: they run until they are gone (what
        the PodGroup's phase reports)."""
        running = self.placed + self.succeeded
        return self._enough(len(running), Counter(task_of(pod) for pod in running))

    def _enough(self, ready: int, per_task: Counter[str]) -> bool:
        if ready < self.min_member:
            return False
        tasks = self.group.spec.min_task_member if self.group is not None else {}
        return all(per_task[task] >= wanted for task, wanted in tasks.items())

    @cached_property
    def to_plan(self) -> tuple[Planned, Rejection | None]:
        """The pending members a plan places: each task's shortfall of `minTaskMember` first,
        then up to minMember, in the order plans place them; or why there are too few. Kept
        with the view: every walk plans each waiting gang again."""
        assert self.group is not None
        spec = self.group.spec
        placed_per_task = self.ready_per_task
        chosen: list[Pod] = []
        for task, wanted in sorted(spec.min_task_member.items()):
            need = wanted - placed_per_task[task]
            if need <= 0:
                continue
            of_task = [pod for pod in self.pending if task_of(pod) == task]
            if len(of_task) < need:
                have = placed_per_task[task] + len(of_task)
                message = f"gang {self.key}: task {task} has {have} of the {wanted} pods it needs"
                return Planned((), self.reach), Rejection(Cause.NOT_ENOUGH_PODS_OF_TASK, message)
            chosen.extend(of_task[:need])
        rest = self.pending
        if chosen:
            taken = {pod.metadata.uid for pod in chosen}
            rest = [pod for pod in rest if pod.metadata.uid not in taken]
        chosen.extend(rest[: max(0, self.min_member - self.ready - len(chosen))])
        return Planned(chosen, self.reach), None

    @cached_property
    def conflict(self) -> str | None:
        """Why a pending member cannot be placed in this gang: it names another group too
        (`naming_conflict`), or its priority is not its native group's (kube-scheduler places
        a native PodGroup's pods only when they all have the group's priority); None when none
        of them has such a problem."""
        named = next(filter(None, map(naming_conflict, self.pending)), None)
        if named is not None or self.group is None or self.group.group_kind is not NATIVE:
            return named
        group, wanted = self.group, self.group.own_priority
        for pod in self.pending:
            have = pod.spec.priority
            if wanted is None:  # (it states no value: the class names must agree)
                same = pod.spec.priority_class_name == group.spec.priority_class_name
            else:
                same = have == wanted
            if not same:
                theirs = (
                    f"class {group.spec.priority_class_name or '(none)'}"
                    if wanted is None
                    else f"priority {wanted}"
                )
                return (
                    f"pod {pod.metadata.key} has priority {have} (class "
                    f"{pod.spec.priority_class_name or '(none)'}) but its PodGroup has {theirs}: "
                    "kube-scheduler places a native PodGroup's pods only when they share its "
                    "priority"
                )
        return None

    @cached_property
    def sla_waiting_time(self) -> float | None:
        """Its PodGroup's own starvation limit (`PodGroup.sla_waiting_time`), read once per view:
        every walk asks whether each waiting gang starves."""
        return self.group.sla_waiting_time if self.group is not None else None

    @cached_property
    def largest_cpu(self) -> int | None:
        """The cpu the largest member a plan places asks for (`to_plan`): a room where no node
        has that much free refuses the gang. None when it is refused whatever the room (no
        PodGroup, too few pods); -1 when nothing is left to place (any room takes that)."""
        if self.group is None or self.ready + len(self.pending) < self.group.spec.min_member:
            return None
        members, reason = self.to_plan
        if reason is not None:
            return None
        return members[0].request[CPU] if members else -1


Shape = tuple[tuple[Resources, tuple[Toleration, ...], int], ...]  # see Planned.shape


class Planned(list[Pod]):
    """Pods in the order plans place them (`largest_first`), in `runs` of pods `alike` (as
    slices: start, end): a plan places a run node by node, as many as fit at once, instead of
    pod by pod. Sorted and compared once, where the list is kept. `reach`: what their gang's
    network topology asks of where they go (`gangs.topology`)."""

    def __init__(self, pods: Iterable[Pod], reach: Reach | None = None) -> None:
        super().__init__(sorted(pods, key=largest_first))
        self.reach = reach
        self.runs: list[tuple[int, int]] = []
        start = 0
        for index in range(1, len(self) + 1):
            if index == len(self) or not alike(self[index - 1], self[index]):
                self.runs.append((start, index))
                start = index

    @cached_property
    def shape(self) -> Shape | None:
        """All that placing these pods depends on, run by run (request, tolerations, how many),
        when every pod runs anywhere: lists of equal shape get equal placements, position by
        position, in an unchanged room. None when a pod has a nodeSelector or node affinity
        (what it may run on is not worth comparing), or when their gang asks for a network
        topology (where they go depends on which pods are in which partition)."""
        if self.reach is not None:
            return None
        pods = [(self[start], end - start) for start, end in self.runs]
        if not all(pod.runs_anywhere for pod, _ in pods):
            return None
        return tuple((pod.request, tuple(pod.spec.tolerations), count) for pod, count in pods)


def largest_first(pod: Pod) -> tuple[int, int, str]:
    """Sort key: the pods hardest to place first (most cpu, then memory), then by name."""
    return (-pod.request[CPU], -pod.request[MEMORY], pod.metadata.name)


def alike(one: Pod, other: Pod) -> bool:
    """Whether the two pods ask the same of every node: equal requests, no nodeSelector or
    required node affinity, the same tolerations."""
    return (
        one.request == other.request
        and one.runs_anywhere
        and other.runs_anywhere
        and one.spec.tolerations == other.spec.tolerations
    )


def view_gang(state: ClusterState, key: str) -> GangView:
    """The gang as the state shows it now: kept until the gang changes (`_Views`), so a view (and
    what its properties computed) is shared by every reader until then. Readers must not change
    its lists."""
    views = _VIEWS.of(state)
    kept = views.get(state, key)
    if kept is not None:
        return kept
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
    group = state.pod_groups.get(key)
    arrival = state.arrivals.get(key, 0)
    reach = None
    if group is not None and (
        group.spec.network_topology is not None or group.spec.sub_group_policy
    ):
        at = {
            pod.metadata.uid: state.placed_on(pod.metadata.uid) or ""
            for pod in placed
            if pod.metadata.deletion_timestamp is None
        }
        reach = reach_of(group, placed + pending, at, Topology.of(state))
    view = GangView(key, group, placed, succeeded, pending, failed, arrival, reach=reach)
    if key in state.pod_groups or key in state.members:  # nothing is kept for unknown keys
        views.keep(key, view)
    return view


class FollowsGangs(ABC):
    """Figures kept over every gang with a PodGroup and brought up to date from the gangs that
    changed since the last call (the state's gang change log), so that keeping them does not
    view every gang in the cluster at each call. Subclasses say how to start over and how one
    gang counts."""

    def __init__(self) -> None:
        self._at = -1  # the state's gang generation seen so far

    def catch_up(self, state: ClusterState) -> None:
        if self._at == state.gang_generation:
            return  # no gang changed since
        changed = state.gangs_changed(self._at)
        if changed is None:  # first call, or too far behind: every gang again
            self._start_over()
            changed = set(state.pod_groups)
        for key in changed:
            self._changed(state, key)
        self._at = state.gang_generation

    @abstractmethod
    def _start_over(self) -> None:
        """Forget everything kept: every gang is counted again."""

    @abstractmethod
    def _changed(self, state: ClusterState, key: str) -> None:
        """Gang `key` changed (or is counted for the first time, or is gone)."""


class Marked(FollowsGangs):
    """The keys of the gangs whose view `marks`, in the order first marked: which gangs have
    members held by Lahar's gate (`GangView.held`), which have parked ones."""

    def __init__(self, marks: Callable[[GangView], bool]) -> None:
        super().__init__()
        self._marks = marks
        self._keys: dict[str, None] = {}  # insertion-ordered set

    def keys(self, state: ClusterState) -> list[str]:
        self.catch_up(state)
        return list(self._keys)

    def __contains__(self, key: str) -> bool:
        """Whether gang `key` was marked when last caught up."""
        return key in self._keys

    def _start_over(self) -> None:
        self._keys = {}

    def _changed(self, state: ClusterState, key: str) -> None:
        if self._marks(view_gang(state, key)):
            self._keys[key] = None
        else:
            self._keys.pop(key, None)


class Unplaced(Marked):
    """The keys of the gangs with a PodGroup that do not stand and have pending members."""

    def __init__(self) -> None:
        super().__init__(
            lambda gang: gang.group is not None and bool(gang.pending) and not gang.stands
        )


def held(gang: GangView) -> bool:
    return bool(gang.held)


def parked(gang: GangView) -> bool:
    return any(pod.parked for pod in gang.pending)


def refusal_before_plan(
    gang: GangView, backoff_ends: float | None, now: float, backoff: float
) -> Rejection | None:
    """Why the gang waits before any plan: it has no PodGroup, or it backs off (until
    `backoff_ends`, for `backoff` seconds); None: neither."""
    key = gang.key
    if gang.group is None:
        return Rejection(
            Cause.NO_POD_GROUP,
            f"gang {key}: PodGroup {key} does not exist; its pods wait until it is created",
        )
    if gang.group.problem:
        message = f"gang {key}: {gang.group.problem}; its pods wait until the PodGroup is fixed"
        return Rejection(Cause.INVALID_GROUP, message)
    if gang.conflict is not None:
        return Rejection(Cause.INVALID_GROUP, f"gang {key}: {gang.conflict}")
    return backoff_refusal(key, backoff_ends, now, backoff)


def gang_priority(state: ClusterState, gang: GangView) -> int:
    """The gang's priority: its PodGroup's PriorityClass, else its highest member's priority."""
    group = gang.group
    if group is not None and group.spec.priority_class_name:
        known = state.priority_classes.get(group.spec.priority_class_name)
        if known is not None:
            return known.value
    return gang.highest_priority


class _Views(FollowsGangs):
    """The gang views computed since their gangs last changed, per cluster state: a gang's view
    is dropped when the state's gang change log names it."""

    def __init__(self) -> None:
        super().__init__()
        self._views: dict[str, GangView] = {}

    def get(self, state: ClusterState, key: str) -> GangView | None:
        self.catch_up(state)
        return self._views.get(key)

    def keep(self, key: str, view: GangView) -> None:
        self._views[key] = view

    def _start_over(self) -> None:
        self._views.clear()

    def _changed(self, state: ClusterState, key: str) -> None:
        self._views.pop(key, None)


class _ViewsByState:
    """The views kept per cluster state, referenced weakly: a state that is gone takes its views
    along (what is kept with a view must not hold its state, or the state would never go). The last
    state asked about is found without the weak lookup, and kept until another is: a process, or a
    simulation, asks about one state all the time."""

    def __init__(self) -> None:
        self._all: WeakKeyDictionary[ClusterState, _Views] = WeakKeyDictionary()
        self._last: tuple[ClusterState, _Views] | None = None

    def of(self, state: ClusterState) -> _Views:
        last = self._last
        if last is not None and last[0] is state:
            return last[1]
        views = self._all.get(state)
        if views is None:
            views = self._all[state] = _Views()
        self._last = (state, views)
        return views

    def forget(self, state: ClusterState) -> None:
        """Drop what is kept for `state`: its views are computed anew."""
        self._all.pop(state, None)
        self._last = None


_VIEWS = _ViewsByState()
