"""The bind barrier: an admitted gang's binds wait until the gang can stand, then go together.

kube-scheduler binds each pod in its own goroutine, so a bind call waiting at the barrier does not
stop it from scheduling other pods. A member's bind waits (an awaited future, no thread) until
`minMember` members are placed: waiting here, or already bound. Then every waiting binding is
created at once; members beyond `minMember` bind at once. A member waiting at the barrier counts
on its node (assumed) and its slot in the gang's reservation becomes that usage, so nobody else
takes the place meanwhile.

If the gang does not come together within the barrier timeout, every waiting member gets an error
(the scheduler forgets it and retries later; a bind call must end its wait before the scheduler's
httpTimeout). What happens to the gang depends on why it is short:

- its missing members all exist, ungated and pending: the scheduler has not come to them yet
  (its queue is long, or they are in backoff). The gang keeps its admission, the waiting
  members' slots are reserved again, and they come back to the barrier when the scheduler
  retries them: a gang is not given up for being slow to arrive. This patience lasts until the
  gang has been admitted for `reservation_timeout`;
- else (members missing, deleted, or held by another's gate), or past that: the assumptions and
  the reservation are dropped and the gang backs off, so two gangs cannot keep each other's
  capacity reserved forever.

A member deleted while waiting at the barrier fails the whole gang before any binding is created;
a binding the API refuses after others succeeded cannot be undone: it is logged and counted as a
partial gang.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from extender.actions.bind import Binder, bind, create_binding
from extender.api.log_fields import about_gang
from extender.api.objects import Pod
from extender.api.scheduling import gang_key
from extender.api.wire import ExtenderBindingArgs, ExtenderBindingResult
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, GangView, Slot, view_gang

log = logging.getLogger(__name__)


@dataclass
class BarrierObserver:
    """What the barrier reports (metrics hook in here); no-ops by default."""

    waited: Callable[[float], None] = lambda seconds: None
    timed_out: Callable[[str], None] = lambda key: None
    waited_on: Callable[[str], None] = lambda key: None  # timed out, members still coming
    partial: Callable[[str], None] = lambda key: None
    stood: Callable[[str], None] = lambda key: None  # its minMember-th member bound: it stands


@dataclass
class _Waiting:
    pod: Pod
    args: ExtenderBindingArgs
    since: float
    result: asyncio.Future[str]  # "" when bound, else the error
    within: frozenset[str] | None = None  # the HyperNode its slot kept it in (`Slot.within`)


@dataclass
class _Gate:
    timer: asyncio.TimerHandle
    waiting: dict[str, _Waiting] = field(default_factory=dict)


class Barrier:
    def __init__(
        self,
        state: ClusterState,
        engine: Engine,
        binder: Binder,
        observer: BarrierObserver | None = None,
    ) -> None:
        self.state, self.engine, self.binder = state, engine, binder
        self.observer = observer or BarrierObserver()
        self._gates: dict[str, _Gate] = {}

    def waiting(self, key: str | None = None) -> int:
        """Bind calls waiting at the barrier now: of gang `key`, or of every gang."""
        if key is None:
            return sum(len(gate.waiting) for gate in self._gates.values())
        gate = self._gates.get(key)
        return len(gate.waiting) if gate is not None else 0

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        pod = self.state.pods.get(args.pod_uid) if args.pod_uid else None
        key = gang_key(pod) if pod is not None else None
        if pod is None or key is None or key not in self.state.pod_groups:
            return await bind(self.state, self.binder, args)
        slot = self.engine.consume(pod.metadata.uid, args.node)
        gate = self._gates.get(key)
        if gate is None and view_gang(self.state, key).stands:  # an extra member: a plain bind
            return await bind(self.state, self.binder, args, note=" (gang stands)")
        self.state.assume(pod, args.node)
        gang = view_gang(self.state, key)
        if gate is None and gang.stands:  # this member makes it stand (minMember 1): at once
            error = await create_binding(self.state, self.binder, args, note=" (gang stands)")
            if not error:
                self.observer.stood(key)
            return ExtenderBindingResult(error=error)
        if gate is None:
            loop = asyncio.get_running_loop()
            timeout = self._gather_timeout(key)
            gate = self._gates[key] = _Gate(loop.call_later(timeout, self._time_out, key))
        within = slot.within if slot is not None else None
        waiting = _Waiting(
            pod, args, time.monotonic(), asyncio.get_running_loop().create_future(), within
        )
        previous = gate.waiting.get(pod.metadata.uid)
        if previous is not None and not previous.result.done():
            previous.result.set_result("superseded by a newer bind call for the same pod")
        gate.waiting[pod.metadata.uid] = waiting
        # (one line per member at debug, as kube-scheduler logs its binds: the gang's own lines,
        # when it stands or gives up, are at info)
        log.debug(
            "bind of pod %s to node %s waits at the barrier: gang %s has %d of %d members placed",
            pod.key,
            args.node,
            key,
            gang.ready,
            gang.min_member,
        )
        if gang.stands or any(self._deleted(w.pod) for w in gate.waiting.values()):
            # (a member deleted while waiting fails the gang now: it cannot stand on it)
            asyncio.get_running_loop().create_task(self._release(key))
        try:
            error = await waiting.result
        except asyncio.CancelledError:  # the scheduler gave up on the call
            if gate.waiting.get(pod.metadata.uid) is waiting:
                del gate.waiting[pod.metadata.uid]
                self.state.forget(pod.metadata.uid)
            if not gate.waiting and self._gates.get(key) is gate:  # nobody waits: no timeout due
                gate.timer.cancel()
                del self._gates[key]
            raise
        self.observer.waited(time.monotonic() - waiting.since)
        return ExtenderBindingResult(error=error)

    async def _release(self, key: str) -> None:
        gate = self._gates.pop(key, None)
        if gate is None:
            return
        gate.timer.cancel()
        waiting = list(gate.waiting.values())
        gone = [w.pod.key for w in waiting if self._deleted(w.pod)]
        if gone:
            self._fail(
                key,
                waiting,
                f"gang {key}: member {', '.join(gone)} was deleted while waiting at the barrier",
            )
            self.engine.release(key)
            return
        log.info(
            "gang %s stands: creating the %d waiting bindings together",
            key,
            len(waiting),
            extra=about_gang(key),
        )
        errors = await asyncio.gather(
            *(create_binding(self.state, self.binder, w.args, note=" (gang)") for w in waiting)
        )
        failed = [(w, e) for w, e in zip(waiting, errors, strict=True) if e]
        for w, error in zip(waiting, errors, strict=True):
            if not w.result.done():
                w.result.set_result(error)
        if not failed:
            self.observer.stood(key)
        if failed and len(failed) < len(waiting):
            self.observer.partial(key)
            log.error(
                "gang %s is partly bound: %s refused after the others were bound",
                key,
                ", ".join(f"{w.pod.key} ({e})" for w, e in failed),
                extra=about_gang(key),
            )

    def _gather_timeout(self, key: str) -> float:
        """How long the gang's members wait for each other here: the policy's barrier timeout,
        or its PodGroup's own shorter limit."""
        limit = self.engine.gang_settings.barrier_timeout
        group = self.state.pod_groups.get(key)
        own = group.gather_timeout if group is not None else None
        return min(limit, own) if own is not None and own > 0 else limit

    def _time_out(self, key: str) -> None:
        gate = self._gates.pop(key, None)
        if gate is None:
            return
        waiting = list(gate.waiting.values())
        gang = view_gang(self.state, key)
        settings = self.engine.gang_settings
        short = f"only {gang.ready} of {gang.min_member} members were placed within " + (
            f"{self._gather_timeout(key):.0f}s"
        )
        coming = self._coming(gang)
        if coming is not None:
            slots = {
                w.pod.metadata.uid: Slot(w.args.node, w.pod.request, w.within) for w in waiting
            }
            self._fail(
                key,
                waiting,
                f"gang {key}: {short}; {coming} more wait in the scheduler's queue: the gang "
                "keeps its reservation and the waiting members are placed again",
                level=logging.INFO,
            )
            self.engine.restore(key, slots)
            self.observer.waited_on(key)
            return
        self._fail(
            key,
            waiting,
            f"gang {key}: {short}; none bound, backing off {settings.backoff:.0f}s",
        )
        self.observer.timed_out(key)
        self.engine.release(key, back_off=True)

    def _coming(self, gang: GangView) -> int | None:
        """How many of the gang's missing members the scheduler still has to place (pending,
        ungated, not being deleted), when they are enough for it to stand and it was admitted
        less than `reservation_timeout` ago; else None (it gives up)."""
        admitted = self.engine.admitted_at(gang.key)
        timeout = self.engine.gang_settings.reservation_timeout
        if admitted is None or self.engine.clock() - admitted >= timeout:
            return None
        members, refusal = gang.to_plan
        if refusal is not None or len(gang.placed) + len(gang.succeeded) + len(members) < (
            gang.min_member
        ):
            return None
        if any(pod.spec.scheduling_gates for pod in members):
            return None
        return len(members)

    def _fail(
        self, key: str, waiting: list[_Waiting], error: str, *, level: int = logging.WARNING
    ) -> None:
        log.log(
            level,
            "%s (releasing %d members waiting at the barrier)",
            error,
            len(waiting),
            extra=about_gang(key),
        )
        for w in waiting:
            self.state.forget(w.pod.metadata.uid)
            if not w.result.done():
                w.result.set_result(error)

    def _deleted(self, pod: Pod) -> bool:
        current = self.state.pods.get(pod.metadata.uid)
        return current is None or current.metadata.deletion_timestamp is not None
