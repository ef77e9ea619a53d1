"""kube-scheduler's loop as the simulation plays it, calling Lahar's real decisions.

One pod at a time from the active queue (higher priority first, then first come): the gang rules'
verdict and the session's filter over every node (what the extender's filter verb runs), the
session's scores over the nodes that passed (prioritize; ties broken at random like
kube-scheduler's, from a seeded generator), then the bind: through Lahar's bind barrier when the
policy has gangs (`actions.barrier`, the extender's bind verb, holding members until the gang can
stand), else through the plain bind (`actions.bind`). A pod no node takes is parked until
capacity frees (a pod ends or is evicted, a held gang is released) or a gang's backoff ends, as
kube-scheduler requeues unschedulable pods on cluster events and Lahar's waker on its own.

Not modelled: in-tree filters beyond resources (the simulated nodes have no taints or labels),
kube-scheduler's per-pod backoff and its API latency; the policy `stock` leaves out gangs and
queues: pod after pod, least allocated first, as the stock scheduler places them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from collections.abc import Awaitable, Callable

from extender.actions.barrier import Barrier
from extender.actions.bind import Binder, bind
from extender.api.candidates import Candidates
from extender.api.objects import Pod
from extender.api.scheduling import gang_key
from extender.api.wire import ExtenderBindingArgs
from extender.cache.state import ClusterState
from extender.framework.gang_types import PLAIN
from extender.framework.session import Engine

Bound = Callable[[Pod, str], None]


class Scheduler:
    def __init__(
        self, state: ClusterState, engine: Engine, binder: Binder, *, seed: int = 0
    ) -> None:
        self.state, self.engine = state, engine
        self.rng = random.Random(seed)  # noqa: S311 - tie-breaks to repeat, not secrets
        gangs = engine.gangs
        self.barrier = Barrier(state, gangs, binder) if gangs is not None else None
        self.binder = binder
        self._active: list[tuple[int, float, int, int, str]] = []  # see add()
        self._created: dict[str, tuple[float, int]] = {}
        self._order = itertools.count()
        self._queued: set[str] = set()
        self.parked: dict[str, Pod] = {}
        self._wake = asyncio.Event()
        self._binds: set[asyncio.Task[None]] = set()
        self.attempts = 0
        self._candidates: Candidates | None = None
        self._reminder: asyncio.TimerHandle | None = None
        if gangs is not None:
            gangs.on_released.append(lambda key: self.requeue())

    def add(self, pod: Pod, created: tuple[float, int] | None = None) -> None:
        """A pending pod joins the active queue, behind pods of higher priority and pods
        created before it (`created`: its creation time and its index in its job, so the pods
        of jobs created at once interleave as their controllers create them; kept when the
        pod is requeued, as kube-scheduler keeps a pod's timestamp)."""
        uid = pod.metadata.uid
        if created is not None:
            self._created[uid] = created
        if uid not in self._queued:
            self._queued.add(uid)
            when, index = self._created.get(uid, (0.0, 0))
            entry = (-pod.spec.priority, when, index, next(self._order), uid)
            heapq.heappush(self._active, entry)
        self._wake.set()

    def requeue(self) -> None:
        """Capacity freed or the gang rules moved: every parked pod is tried again."""
        parked, self.parked = self.parked, {}
        for pod in parked.values():
            self.add(pod)
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.engine.gangs is not None:
                self.engine.gangs.expire()
                self.state.expire_assumed()
            while self._active:
                *_, uid = heapq.heappop(self._active)
                self._queued.discard(uid)
                pod = self.state.pods.get(uid)
                if pod is None or pod.spec.node_name or self.state.placed_on(uid) is not None:
                    continue  # gone, bound, or held at the barrier
                node = self.place(pod)
                if node is None:
                    self.parked[uid] = pod
                    continue
                task = asyncio.get_running_loop().create_task(self._bind(pod, node))
                self._binds.add(task)
                task.add_done_callback(self._binds.discard)
                await asyncio.sleep(0)  # the bind runs up to its barrier before the next pod
            self._remind()

    def _remind(self) -> None:
        """Wake again when the gang rules will have moved with no cluster event: a backoff
        ends (its gang is tried again), a reservation may time out."""
        gangs = self.engine.gangs
        if gangs is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        moments = [t for t in gangs.backoff_until.values() if t > now] if self.parked else []
        moments += [
            a.progress_at + gangs.settings.reservation_timeout for a in gangs.admissions.values()
        ]
        due = min((t for t in moments if t > now), default=None)
        if due is not None and (self._reminder is None or self._reminder.when() != due):
            if self._reminder is not None:
                self._reminder.cancel()
            self._reminder = loop.call_at(due, self.requeue)

    def place(self, pod: Pod) -> str | None:
        """The node the scheduler picks for `pod` now, or None when no node passes."""
        self.attempts += 1
        session = self.engine.session(self.state.view())
        verdict = PLAIN
        gangs = self.engine.gangs
        if gangs is not None:
            gangs.serve(pod.spec.scheduler_name)
            verdict = gangs.verdict(self.state, session.snapshot.nodes, pod)
        outcome = session.filter(pod, self._all_nodes(), verdict)
        if not outcome.passed:
            return None
        passed = sorted(outcome.passed)  # the protocol has no order; the tie-break needs one
        scores = session.score(pod, passed)
        best = max(score for _, score in scores)
        return self.rng.choice([name for name, score in scores if score == best])

    def _all_nodes(self) -> Candidates:
        names = sorted(self.state.view().nodes)
        if self._candidates is None or self._candidates.names != names:
            self._candidates = Candidates(names, frozenset(names))
        return self._candidates

    async def _bind(self, pod: Pod, node: str) -> None:
        meta = pod.metadata
        args = ExtenderBindingArgs(
            pod_name=meta.name, pod_namespace=meta.namespace, pod_uid=meta.uid, node=node
        )
        if self.barrier is not None and gang_key(pod) is not None:
            result = await self.barrier.bind(args)
        else:
            result = await bind(self.state, self.binder, args)
        if result.error:  # refused or released: the scheduler forgets it and tries again later
            self.parked[meta.uid] = pod


def binder_of(bound: Callable[[str, str], Awaitable[None]]) -> Binder:
    """The bind barrier's binder over the simulation's `bound(uid, node)`."""

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        await bound(uid, node)

    return binder
