"""kube-scheduler's loop as the simulation plays it, calling Lahar's real decisions.

One pod at a time from the active queue (higher priority first, then the earlier timestamp: its
creation, or its last failed attempt, as kube-scheduler refreshes it): the gang rules'
verdict and the session's filter over every node (what the extender's filter verb runs), the
session's scores over the nodes that passed (prioritize; ties broken at random like
kube-scheduler's, from a seeded generator), then the bind: through Lahar's bind barrier when the
policy has gangs (`actions.barrier`, the extender's bind verb, where members wait until the gang
can stand), else through the plain bind (`actions.bind`). A pod no node takes is parked until an
event (a pod ends or is evicted, a gang's reservation is released, a gang's backoff ends:
kube-scheduler requeues pods an extender rejected on any cluster event, Lahar's waker on its own)
and its own backoff (1 s, doubling per failed attempt, at most 10 s) are over. A bind that fails
(the barrier released the gang) goes back after its backoff without waiting for an event, as
kube-scheduler retries a pod after an error. A pod an attempt failed for is what kube-scheduler
marks Unschedulable (PodScheduled False), which an autoscaler reads: `unschedulable` lists those
still pending, and `on_parked` is told of each parked pod.

The nodes a pod is asked about are those kube-scheduler's in-tree filters pass before Lahar sees
them: not cordoned (NodeUnschedulable), matching the pod's nodeSelector and required node
affinity (NodeAffinity), with no NoSchedule or NoExecute taint the pod does not tolerate
(TaintToleration), as `Pod.may_run_on` reads them. A run never changes a node's labels, taints
or cordon, so the list is kept until a node joins or leaves: one list for every pod that asks for
no node and tolerates nothing (on a trace without labels, taints or cordons, every node), one per
kind of other pod (its nodeSelector, node affinity and tolerations: `Pod.placement_key`).

Not modelled: in-tree filters beyond resources, node affinity, taints and cordons (pod affinity,
topology spread, volumes, ports), the API server's latency, and kube-scheduler 1.33+'s
`SchedulerPopFromBackoffQ` (an idle scheduler takes pods from its backoff queue early): an
attempt here takes no time, so the scheduler would always be idle and retry every parked pod at
every event (tried: 4.6 to 7.7 times the attempts), where a real one is busy for the
milliseconds each attempt takes. The policy `stock` leaves out gangs and queues: pod after pod,
least allocated first, as the stock scheduler places them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from collections.abc import Awaitable, Callable, Iterable

from cachetools import LRUCache

from extender.actions.barrier import Barrier
from extender.actions.bind import Binder, bind
from extender.api.candidates import Candidates
from extender.api.objects import Pod
from extender.api.scheduling import gang_key
from extender.api.wire import ExtenderBindingArgs
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, GangReleased, view_gang
from extender.simulate.clock import watched

Bound = Callable[[Pod, str], None]
REFUSING = ("NoSchedule", "NoExecute")  # the taint effects that keep a pod off a node
PER_POD = 4096  # kinds of pods with node constraints (`Pod.placement_key`) whose nodes are kept
BACKOFF_INITIAL, BACKOFF_MAX = 1.0, 10.0  # kube-scheduler's podInitialBackoffSeconds, podMax...


class Scheduler:
    def __init__(
        self, state: ClusterState, engine: Engine, binder: Binder, *, seed: int = 0
    ) -> None:
        self.state, self.engine = state, engine
        self.rng = random.Random(seed)  # noqa: S311 - tie-breaks to repeat, not secrets
        self.barrier = Barrier(state, engine, binder) if engine.gang_rules else None
        self.binder = binder
        self._active: list[tuple[int, float, int, int, str]] = []  # see add()
        self._created: dict[str, tuple[float, int]] = {}
        self._order = itertools.count()
        self._queued: set[str] = set()
        self.parked: dict[str, Pod] = {}
        self._failures: dict[str, int] = {}  # failed attempts per pod (its backoff)
        self._marked: dict[str, None] = {}  # pods an attempt failed for, until they are placed
        self.on_parked: list[Callable[[Pod], None]] = []
        self._tried_at: dict[str, float] = {}
        self._backing_off: list[tuple[float, int, Pod]] = []  # (ready at, order, pod)
        self._flush: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._binds: set[asyncio.Task[None]] = set()
        self.attempts = 0
        self._candidates: tuple[int, Candidates] | None = None  # (membership, the plain pods')
        # placement key -> the nodes of pods of that key, at that membership (bounded: pods come
        # and go in a long run)
        self._per_pod: LRUCache[str, Candidates] = LRUCache(PER_POD)
        self._reminder: asyncio.TimerHandle | None = None
        engine.events.subscribe(GangReleased, lambda event: self._released(event.key))

    def add(self, pod: Pod, created: tuple[float, int] | None = None) -> None:
        """A pending pod joins the active queue, behind pods of higher priority and pods whose
        timestamp is earlier (`created`: its creation time and its index in its job, so the pods
        of jobs created at once interleave as their controllers create them; `park` moves it to
        the pod's last failed attempt, as kube-scheduler refreshes a pod's timestamp when it
        goes back to its queue)."""
        uid = pod.metadata.uid
        if created is not None:
            self._created[uid] = created
        if uid not in self._queued:
            self._queued.add(uid)
            when, index = self._created.get(uid, (0.0, 0))
            entry = (-pod.spec.priority, when, index, next(self._order), uid)
            heapq.heappush(self._active, entry)
        self._wake.set()

    def park(self, pod: Pod) -> None:
        """No node takes the pod now: it waits for an event, and backs off (kube-scheduler's
        1 s doubling per failed attempt up to 10 s) before it is tried again."""
        self._failed(pod)
        self.parked[pod.metadata.uid] = pod
        for callback in self.on_parked:
            callback(pod)

    def unschedulable(self) -> list[Pod]:
        """The pending pods an attempt failed for (marked Unschedulable), in the order they were
        first marked."""
        found = []
        for uid in list(self._marked):
            pod = self.state.pods.get(uid)
            if pod is None or pod.spec.node_name or self.state.placed_on(uid) is not None:
                del self._marked[uid]  # (gone, bound or at the barrier: no longer marked)
                continue
            found.append(pod)
        return found

    def _failed(self, pod: Pod) -> None:
        """An attempt at the pod failed: one failure more (its backoff), tried now."""
        uid = pod.metadata.uid
        self._failures[uid] = self._failures.get(uid, 0) + 1
        self._marked[uid] = None
        now = asyncio.get_running_loop().time()
        self._tried_at[uid] = now
        # Its place in line: when it failed last, after the pods that failed before it at the
        # same moment (attempts take no time here; kube-scheduler's take some, in this order).
        self._created[uid] = (now, next(self._order))

    def requeue(self) -> None:
        """A cluster event (a pod ended or was evicted, a gang released, a backoff of Lahar's
        over): every parked pod is tried again once its own backoff is over, as kube-scheduler
        moves pods an extender rejected (no queueing hint narrows them) on any event."""
        parked, self.parked = self.parked, {}
        self._back(parked.values())

    def _back(self, pods: Iterable[Pod]) -> None:
        """The pods go back to be tried: at once if their backoff is over, else when it is."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for pod in pods:
            uid = pod.metadata.uid
            backoff = min(BACKOFF_MAX, BACKOFF_INITIAL * 2 ** (self._failures.get(uid, 1) - 1))
            ready = self._tried_at.get(uid, now) + backoff
            if ready <= now:
                self.add(pod)
            else:
                heapq.heappush(self._backing_off, (ready, next(self._order), pod))
        if self._backing_off and (
            self._flush is None or self._flush.when() > self._backing_off[0][0]
        ):
            if self._flush is not None:
                self._flush.cancel()
            self._flush = loop.call_at(self._backing_off[0][0], self._flush_backoff)
        self._wake.set()

    def _flush_backoff(self) -> None:
        """Pods whose backoff is over join the active queue."""
        loop = asyncio.get_running_loop()
        self._flush = None
        while self._backing_off and self._backing_off[0][0] <= loop.time():
            self.add(heapq.heappop(self._backing_off)[2])
        if self._backing_off:
            self._flush = loop.call_at(self._backing_off[0][0], self._flush_backoff)

    def _released(self, key: str) -> None:
        """A gang's reservation ended: when it did not end by the gang standing (its slots
        became its pods), capacity was given back, which is an event."""
        if not view_gang(self.state, key).stands:
            self.requeue()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            self.engine.expire()  # (assumptions need no expiry: binds never fail)
            while self._active:
                *_, uid = heapq.heappop(self._active)
                self._queued.discard(uid)
                pod = self.state.pods.get(uid)
                if pod is None or pod.spec.node_name or self.state.placed_on(uid) is not None:
                    continue  # gone, bound, or waiting at the barrier
                node = self.place(pod)
                if node is None:
                    self.park(pod)
                    continue
                task = watched(asyncio.get_running_loop().create_task(self._bind(pod, node)))
                self._binds.add(task)
                task.add_done_callback(self._binds.discard)
                await asyncio.sleep(0)  # the bind runs up to its barrier before the next pod
            self._remind()

    def _remind(self) -> None:
        """Wake again when the gang rules will have moved with no cluster event: a backoff
        ends (its gang is tried again), a reservation may time out."""
        if not self.engine.gang_rules:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        due = min(self.engine.moments(now, backoffs=bool(self.parked)), default=None)
        if due is not None and (self._reminder is None or self._reminder.when() != due):
            if self._reminder is not None:
                self._reminder.cancel()
            self._reminder = loop.call_at(due, self.requeue)

    def place(self, pod: Pod) -> str | None:
        """The node the scheduler picks for `pod` now, or None when no node passes."""
        self.attempts += 1
        # The ties in name order: the seeded tie-break must not depend on a set's order.
        best = sorted(self.choices(pod))
        return self.rng.choice(best) if best else None

    def choices(self, pod: Pod) -> set[str]:
        """The nodes kube-scheduler chooses among for `pod` now: those Lahar's filter passes
        (after the gang rules' verdict, which may admit the pod's gang) scoring highest."""
        candidates = self._all_nodes(pod)
        outcome = self.engine.filter(self.state, pod, candidates, fit=True, with_reasons=False)
        if not outcome.passed:
            return set()
        return self.engine.session(self.state.view()).best(
            pod, candidates.members if outcome.everything_passed else outcome.passed
        )

    def _all_nodes(self, pod: Pod) -> Candidates:
        """The nodes the in-tree filters pass for `pod`, in name order (see the module
        docstring)."""
        view = self.state.view()
        if self._candidates is None or self._candidates[0] != view.membership:
            names = [
                name
                for name, info in sorted(view.nodes.items())
                if not info.unschedulable and not any(t.effect in REFUSING for t in info.taints)
            ]
            self._candidates = (view.membership, Candidates(names, frozenset(names)))
            self._per_pod.clear()
        if pod.runs_anywhere and not pod.spec.tolerations:
            return self._candidates[1]
        key = pod.placement_key
        found = self._per_pod.get(key)
        if found is None:
            names = [
                name
                for name, info in sorted(view.nodes.items())
                if not info.unschedulable and pod.may_run_on(info.labels, info.taints, name)
            ]
            self._per_pod[key] = found = Candidates(names, frozenset(names))
        return found

    async def _bind(self, pod: Pod, node: str) -> None:
        meta = pod.metadata
        args = ExtenderBindingArgs(
            pod_name=meta.name, pod_namespace=meta.namespace, pod_uid=meta.uid, node=node
        )
        if self.barrier is not None and gang_key(pod) is not None:
            result = await self.barrier.bind(args)
        else:
            result = await bind(self.state, self.binder, args)
        if result.error:  # refused or released: an error, tried again once its backoff is over
            self._failed(pod)
            self._back([pod])


def binder_of(bound: Callable[[str, str], Awaitable[None]]) -> Binder:
    """The bind barrier's binder over the simulation's `bound(uid, node)`."""

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        await bound(uid, node)

    return binder
