"""Writing Queue status, coalesced, and keeping the `default` Queue in existence.

Anything a queue's status reads (a member bound or gone, a PodGroup created, deleted or moved to
another phase, a Queue changed) only wakes the writer. It then waits `interval`, so that everything
else that happens meanwhile joins the same pass, derives every queue's status
(`server.queue_status`) and merge-patches the queues whose status differs from what the API
shows. However busy the cluster, a queue is written at most once per interval; an idle cluster is
not written at all. The written status goes onto the cached Queue at once, so the next pass does
not write it again before the watch delivers it. A patch that sets `state` goes only onto the
version of the Queue it was derived from: a user closing a queue meanwhile is not overwritten.

Queues form a tree (`spec.parent`): a parent's counts and allocation are its subtree's, and
every queue's `deserved` is its fair share at its level. A queue whose parent is missing, or
whose parents form a loop, is said once (in the log) to share the cluster as a top-level queue.
A queue's deserved share moves with every other queue's demand, so it is written again only
once it moves by more than 5% (or a resource comes or goes) from what this writer last wrote:
a busy cluster does not rewrite every queue at each change. It is Lahar's field: a Queue CRD
without it (Volcano's own) drops it, and the same rule keeps it from being written each pass.
Each pass first makes sure the `default` Queue exists
(PodGroups without a queue go there): it is created when missing at start and again if someone
deletes it. Nothing runs before `ready` (the cache is whole): counts from PodGroups listed before
their pods would be wrong.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from extender.api.log_fields import about_queue
from extender.api.resources import Resources
from extender.api.scheduling import DEFAULT_QUEUE, Queue, QueueStatus
from extender.cache.events import CapacityFreed, GangChanged, PodGroupChanged, QueuesChanged
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, QueueTree
from extender.server.coalesce import Coalesced
from extender.server.queue_status import phases_by_queue, queue_status, rolled_up, status_patch

log = logging.getLogger(__name__)
# (queue name, status merge patch, the resourceVersion it must still be at or None) -> written;
# False: the Queue changed meanwhile, nothing was written.
QueuePatch = Callable[[str, dict[str, Any], str | None], Awaitable[bool]]
QueueCreate = Callable[[str], Awaitable[bool]]  # create the named default queue; False if it exists


DESERVED_STEP = 20  # a deserved share is written again once it moves by 1/20 (5%) of a resource


def moved(last: Resources, now: Resources) -> bool:
    """Whether a deserved share moved far enough from what was last written to write it again:
    a resource came or went, or one moved by more than 5%."""
    if {r for r, v in last.items() if v} != {r for r, v in now.items() if v}:
        return True
    return any(abs(now.get(r, 0) - v) * DESERVED_STEP > v for r, v in last.items() if v)


class QueueWriter(Coalesced):
    first_pass = True  # create the default queue, correct counts written before a restart

    def __init__(
        self,
        state: ClusterState,
        engine: Engine,
        write: QueuePatch,
        create: QueueCreate,
        *,
        ready: asyncio.Event | None = None,
        interval: float = 2.0,
        retry_after: float = 5.0,
    ) -> None:
        super().__init__(ready=ready, interval=interval, retry_after=retry_after)
        self.state, self.engine, self.write, self.create = state, engine, write, create
        self._strays: dict[str, str] = {}  # queue -> why it hangs under root, as last told
        self._deserved: dict[str, Resources] = {}  # queue -> the deserved it was last written

    def attach(self) -> None:
        """Listen to the state (call on the event loop)."""
        super().attach()
        self.state.events.subscribe(GangChanged, lambda event: self.poke())
        self.state.events.subscribe(PodGroupChanged, lambda event: self.poke())
        self.state.events.subscribe(QueuesChanged, lambda event: self.poke())
        # (capacity freed: an assumed binding dropped, too)
        self.state.events.subscribe(CapacityFreed, lambda event: self.poke())

    async def flush(self) -> None:
        if DEFAULT_QUEUE not in self.state.queues and await self._create_default():
            return  # the watch delivers it; its arrival wakes the next pass
        views = self.engine.queues(self.state)
        tree = QueueTree.of(self.state.queues)
        self._say_strays(tree)
        phases = rolled_up(phases_by_queue(self.state.pod_groups.values()), tree)
        for gone in self._deserved.keys() - self.state.queues.keys():
            del self._deserved[gone]
        for name, queue in sorted(self.state.queues.items()):
            view = views[name]
            wanted = queue_status(queue, phases.get(name, Counter()), view.placed, view.deserved)
            last = self._deserved.get(name)
            if last is not None and not moved(last, wanted.deserved):
                # (what was written stands: near enough, or dropped by a schema without it)
                wanted = wanted.model_copy(update={"deserved": queue.status.deserved})
            patch = status_patch(queue.status, wanted)
            if patch is not None:
                await self._write(queue, wanted, patch)

    def _say_strays(self, tree: QueueTree) -> None:
        for name, why in tree.strays.items():
            if self._strays.get(name) != why:
                log.warning(
                    "Queue %s shares the cluster as a top-level queue: %s",
                    name,
                    why,
                    extra=about_queue(name),
                )
        self._strays = dict(tree.strays)

    async def _create_default(self) -> bool:
        try:
            created = await self.create(DEFAULT_QUEUE)
        except Exception as error:  # an API hiccup (or no permission): say so, try again later
            log.warning(
                "could not create the %s Queue: %s",
                DEFAULT_QUEUE,
                error,
                extra=about_queue(DEFAULT_QUEUE),
            )
            self.later(self.poke)
            return False
        if created:
            log.info(
                "created Queue %s: none existed, PodGroups without a queue go there",
                DEFAULT_QUEUE,
                extra=about_queue(DEFAULT_QUEUE),
            )
        return created

    async def _write(self, queue: Queue, wanted: QueueStatus, patch: dict[str, Any]) -> None:
        """Write `patch`. A patch that sets `state` is made only onto the version of the Queue it
        was derived from: users set `state` too (`lahar queue close`), and a state derived from an
        older version would overwrite theirs."""
        name, written = queue.metadata.name, queue.status
        version = (queue.metadata.resource_version or None) if "state" in patch else None
        try:
            done = await self.write(name, patch, version)
        except Exception as error:  # an API hiccup: the next pass tries again
            log.warning(
                "could not write status of Queue %s: %s", name, error, extra=about_queue(name)
            )
            self.later(self.poke)
            return
        if not done:  # the watch brings the newer Queue, and with it the next pass
            log.info(
                "Queue %s changed while its status was written: deriving it again",
                name,
                extra=about_queue(name),
            )
            self.later(self.poke)
            return
        if "deserved" in patch:
            self._deserved[name] = wanted.deserved
        if wanted.state != written.state:
            log.info(
                "Queue %s: state %s -> %s",
                name,
                written.state or "-",
                wanted.state,
                extra=about_queue(name),
            )
        if self.state.queues.get(name) is queue:  # else the watch moved on during the write
            self.state.upsert_queue(queue.model_copy(update={"status": wanted}))
