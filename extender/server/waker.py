"""Sending gangs to the scheduler: lift the gate of gangs Lahar lets in, wake the parked ones.

Gang pods are created behind Lahar's scheduling gate (`api.scheduling.GANG_GATE`): kube-scheduler
does not try them until Lahar lifts it. On every change that may let a gang in or change why it
waits (its pods or PodGroup appear, capacity frees, an admission ends, a backoff ends, a Queue is
created, deleted, opened or closed), a pass asks the gang rules to answer for the held gangs
(`Engine.let_in`: admitted in the fair order while few enough admitted members wait for the
scheduler; the others' reasons remembered, which their PodGroup's condition says) and lifts the
gate of every held member of the gangs let in, all of a gang's at once, so they enter the
scheduler's queue together and come to the bind barrier together however long the backlog.

kube-scheduler also parks pods whose gang Lahar refused at filter time (pods created without the
gate) and retries them on a cluster event or a periodic flush minutes away; Lahar's own changes
(a reservation released, a backoff over, a PodGroup or Queue changed) are no cluster events. So
the same pass asks which parked gangs the fair order lets in now (nothing is reserved) and
touches the annotation `lahar.io/retry` of their parked members, most deserving first, which
requeues them at once; so does a gang admitted at filter time. Passes are debounced; a pod is
touched at most once per `min_interval`, and a gate is lifted once (again if the call failed).

A gang whose Job waits for its admission to create its pods (`cache.expected`) has no gate to
lift: once it is let in, the PodGroup's status (Inqueue) tells the Job's controller to create
them, ungated.

A pass admits the gangs whose ProvisioningRequest is Provisioned, as soon as the nodes bought
for them are there (`gangs.wanting`), before the fair order lets any held gang in (a
gang already ungated may still take them at a filter call first). A gang that waits for nodes
in a queue whose scale-up mode is `unschedulable` (`gangs.scale_up`) has its gate lifted too,
without being admitted: the scheduler tries its members, Lahar refuses them, they are marked
Unschedulable, and an autoscaler adds nodes for them; the gang is admitted, and bound whole,
only once it fits.

A pod held by Lahar's gate that names no group Lahar reads (`stray_gate`: the API server dropped
the `spec.schedulingGroup` the webhook saw, on a cluster without the native gang API) has its gate
lifted at once: nothing else would ever lift it.

When this replica comes to serve (a start, or a standby taking over), it also touches the parked
pods of no gang of the schedulers it serves (`parked_plain`), `WAKES_PER_SECOND` at most: the
scheduler parks a pod its extender refused (a standby's refusal, a cache not synced yet) and no
cluster event may ever requeue it; the periodic flush is minutes away.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable

from extender.api.job_pods import is_expected
from extender.api.log_fields import about_gang, about_pod
from extender.api.objects import Pod
from extender.api.scheduling import gang_key, stray_gate
from extender.cache.events import (
    CapacityFreed,
    GangChanged,
    PodGroupChanged,
    QueuesChanged,
    StrayGate,
)
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, GangAdmitted, GangReleased, view_gang

log = logging.getLogger(__name__)
RETRY_ANNOTATION = "lahar.io/retry"
Patcher = Callable[[str, str, dict[str, str]], Awaitable[None]]  # namespace, name, annotations
Lifter = Callable[[str, str, str], Awaitable[None]]  # namespace, name, uid: lift Lahar's gate
LIFTS = 32  # gates lifted at once
WAKES_PER_SECOND = 50.0  # parked pods of no gang touched when serving starts
STRAY_RETRY = 5.0  # seconds before lifting a stray gate again after a failed try


def parked_plain(pods: Iterable[Pod], schedulers: Collection[str]) -> list[Pod]:
    """The pods of `schedulers` outside any gang that the scheduler parked: pending (no node, not
    finished, not being deleted), not gated, PodScheduled False. Highest priority first."""
    parked = [
        pod
        for pod in pods
        if pod.spec.scheduler_name in schedulers
        and gang_key(pod) is None
        and not pod.spec.node_name
        and not pod.finished
        and pod.metadata.deletion_timestamp is None
        and pod.parked
    ]
    return sorted(parked, key=lambda pod: (-pod.spec.priority, pod.key))


class Waker:
    def __init__(
        self,
        state: ClusterState,
        engine: Engine,
        patch: Patcher,
        lift: Lifter,
        *,
        delay: float = 0.05,
        min_interval: float = 0.25,
    ) -> None:
        self.state, self.engine, self.patch, self.lift = state, engine, patch, lift
        self.delay, self.min_interval = delay, min_interval
        self.on_woken: Callable[[], None] = lambda: None
        self.on_lifted: Callable[[], None] = lambda: None
        self._queue: asyncio.Queue[str] = asyncio.Queue()  # keys of gangs to send
        self._touched: dict[tuple[str, str], float] = {}
        self._lifting: set[str] = set()  # uids whose gate is being lifted, or was
        self._lifts = asyncio.Semaphore(LIFTS)
        self._tasks: set[asyncio.Task[None]] = set()
        self._pass: asyncio.TimerHandle | None = None
        self._queues_seen = state.stamp.queues

    def attach(self) -> None:
        """Listen to the gang rules and the state (call on the event loop)."""
        self.engine.events.subscribe(GangAdmitted, lambda event: self.wake_gang(event.key))
        self.engine.events.subscribe(GangReleased, lambda event: self._released(event.key))
        self.state.events.subscribe(CapacityFreed, lambda event: self.poke())
        self.state.events.subscribe(PodGroupChanged, lambda event: self.poke())
        self.state.events.subscribe(GangChanged, lambda event: self.poke())
        self.state.events.subscribe(QueuesChanged, lambda event: self._queue_changed())
        self.state.events.subscribe(StrayGate, lambda event: self._free(event.pod))

    def _free(self, pod: Pod) -> None:
        """Lift Lahar's gate from a pod that is no gang member (`stray_gate`): it is the
        scheduler's to place, as any pod."""
        if pod.metadata.uid in self._lifting:
            return
        log.info(
            "pod %s holds Lahar's gate but names no PodGroup Lahar reads (a field the API "
            "server dropped when it created the pod?): lifting it, the pod is placed on its own",
            pod.key,
            extra=about_pod(pod.key),
        )
        self._lifting.add(pod.metadata.uid)
        self._spawn(self._lift_stray(pod))

    async def _lift_stray(self, pod: Pod) -> None:
        await self._lift(pod)
        if pod.metadata.uid not in self._lifting:  # it failed: look again in a while
            asyncio.get_running_loop().call_later(STRAY_RETRY, self._free_again, pod.metadata.uid)

    def _free_again(self, uid: str) -> None:
        pod = self.state.pods.get(uid)
        if pod is not None and stray_gate(pod):
            self._free(pod)

    def _queue_changed(self) -> None:
        """A Queue created, deleted or changed in spec or state (not only its status counts):
        the gangs naming it are let in, or refused for the queue, without waiting for another
        change."""
        if self.state.stamp.queues != self._queues_seen:
            self._queues_seen = self.state.stamp.queues
            self.poke()

    def poke(self) -> None:
        """Something changed that may let a gang in: look soon (debounced)."""
        if self._pass is None:
            self._pass = asyncio.get_running_loop().call_later(self.delay, self._look)

    def wake_gang(self, key: str) -> None:
        """Send the gang's pending members to the scheduler (by the background task: this may
        be called from a filter call, which must not walk the gang again)."""
        self._queue.put_nowait(key)

    def _released(self, key: str) -> None:
        self.poke()
        until = self.engine.backoff_ends(key)
        if until is not None:  # retry the gang itself when its backoff ends
            delay = max(0.0, until - self.engine.clock()) + self.delay
            asyncio.get_running_loop().call_later(delay, self.poke)

    def _look(self) -> None:
        self._pass = None
        # Who waits for nodes, as the walk says now (gangs shown to an autoscaler go with the
        # ones the fair order lets in); then the gangs whose nodes were bought for them, before
        # the fair order lets any held gang in.
        self.engine.want_nodes(self.state)
        self.engine.admit_provisioned(self.state)
        for key in self.engine.let_in(self.state):
            self.wake_gang(key)
        for key in self.engine.admissible(self.state):
            log.info(
                "gang %s is let in by the fair order now: waking its pending pods",
                key,
                extra=about_gang(key),
            )
            self.wake_gang(key)

    async def run(self) -> None:
        """Send the queued gangs' members, forever (a background task): lift the gate of the
        held ones, touch the parked ones.

        It starts by waking every gang with pending members, and the parked pods of no gang:
        this replica has just started to serve (a restart, or a standby taking over), and the
        scheduler parked whatever it could not place while no extender answered, which no
        cluster event may ever requeue."""
        self.poke()
        for key in list(self.state.pod_groups):
            if view_gang(self.state, key).pending:
                self.wake_gang(key)
        for pod in [pod for pod in self.state.pods.values() if stray_gate(pod)]:
            self._free(pod)
        self._spawn(self._wake_plain())
        while True:
            key = await self._queue.get()
            gang = view_gang(self.state, key)
            # (let in, or placed already)
            shown = self.engine.shown(key)
            going = self.engine.admission(key) is not None or gang.stands or shown
            held = [p for p in gang.held if going and p.metadata.uid not in self._lifting]
            expected = [p for p in held if is_expected(p.metadata.uid)]
            if expected:  # (no pod to lift a gate from: its Job's controller creates them)
                held = [p for p in held if not is_expected(p.metadata.uid)]
                self._lifting.update(p.metadata.uid for p in expected)  # (said once)
                why = (
                    "waits for nodes, its queue's scale-up mode is unschedulable"
                    if shown and self.engine.admission(key) is None
                    else "is let in"
                )
                log.info(
                    "gang %s %s: its PodGroup shows Inqueue, and its Job's controller creates "
                    "its %d pods",
                    key,
                    why,
                    len(expected),
                    extra=about_gang(key, queue=gang.queue),
                )
            if held and shown and self.engine.admission(key) is None:
                log.info(
                    "gang %s waits for nodes, its queue's scale-up mode is unschedulable: lifting "
                    "the gate of %d pods so that an autoscaler sees them (they bind only once "
                    "the whole gang fits)",
                    key,
                    len(held),
                    extra=about_gang(key, queue=gang.queue),
                )
            elif held:
                log.info(
                    "gang %s is let in: lifting the gate of %d pods",
                    key,
                    len(held),
                    extra=about_gang(key, queue=gang.queue),
                )
            for pod in held:
                self._lifting.add(pod.metadata.uid)
                self._spawn(self._lift(pod))
            for pod in gang.pending:
                if pod.parked and not pod.spec.scheduling_gates:
                    await self._touch(pod.metadata.namespace, pod.metadata.name)
            if len(self._lifting) > 10_000:  # (the gates are gone from the pods in the cache)
                pods = self.state.pods.values()
                self._lifting &= {p.metadata.uid for p in pods if p.spec.scheduling_gates}

    def _spawn(self, work: Coroutine[None, None, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _wake_plain(self) -> None:
        """Touch the parked pods of no gang, `WAKES_PER_SECOND` at most (beside the gangs'
        wakes, which do not wait for these)."""
        pods = parked_plain(self.state.pods.values(), self.engine.schedulers)
        if not pods:
            return
        log.info(
            "came to serve: waking %d parked pods of no gang of schedulers %s (the scheduler "
            "parked them while no extender served and may not retry them for minutes)",
            len(pods),
            ", ".join(sorted(self.engine.schedulers)),
        )
        for pod in pods:
            current = self.state.pods.get(pod.metadata.uid)  # (bound or gone meanwhile: skip)
            if current is not None and parked_plain([current], self.engine.schedulers):
                await self._touch(pod.metadata.namespace, pod.metadata.name)
                await asyncio.sleep(1 / WAKES_PER_SECOND)

    async def _lift(self, pod: Pod) -> None:
        async with self._lifts:
            try:
                await self.lift(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid)
                self.on_lifted()
            except Exception as error:  # a deleted pod, an API hiccup: the next pass retries
                self._lifting.discard(pod.metadata.uid)
                log.info(
                    "could not lift the gate of pod %s: %s",
                    pod.key,
                    error,
                    extra=about_pod(pod.key),
                )
                self.poke()

    async def _touch(self, namespace: str, name: str) -> None:
        now = time.monotonic()
        if now - self._touched.get((namespace, name), -1e9) < self.min_interval:
            return
        self._touched[(namespace, name)] = now
        try:
            await self.patch(namespace, name, {RETRY_ANNOTATION: f"{time.time():.3f}"})
            self.on_woken()
        except Exception as error:  # a deleted pod, an API hiccup: the flush still retries
            log.info(
                "could not wake pod %s/%s: %s",
                namespace,
                name,
                error,
                extra=about_pod(f"{namespace}/{name}"),
            )
        if len(self._touched) > 10_000:
            cutoff = now - self.min_interval
            self._touched = {k: t for k, t in self._touched.items() if t >= cutoff}
