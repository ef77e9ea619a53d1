"""Recording how long each finished gang ran, into the history `lahar whatif` reads.

The status writer says when a gang's PodGroup goes Completed by the Normal `Completed` event it
records (`server.group_status.events`); this writer listens to the status writer's event sink
(`watching`) and so learns each gang that finishes whole, once its status says so (a gang whose
status is left to Volcano's scheduler is not learnt). Its run:

- owner: `namespace/JOB` when a Volcano Job owns the group (the group is named `JOB-<uid of the
  Job>` and `JOB` is among its owners: the cache keeps its owners' names, not their kinds), else
  the group's key (`namespace/name` for a Volcano PodGroup, kind-qualified for the other kinds),
  as `simulate.from_cluster` names a running gang's owner; queue: the group's queue.
- start: when it began to run, as the group itself says it, which a restart does not change:
  the `Scheduled` condition's lastTransitionTime on a Volcano PodGroup (True once the gang
  stands), the same time of Lahar's condition `lahar.io/GangScheduled` on a native one, and
  `status.scheduleStartTime` on a Coscheduling one (stamped when the gang was admitted, the
  moment before its members bind). The cache keeps no member's `status.startTime`. A gang that
  finished without standing (no such time, or a Coscheduling phase other than Finished) ran no
  whole run: nothing is recorded.
- end: when the extender learnt it was Completed, on the wall clock (within the status writer's
  interval of its last member ending: the cache keeps no container's termination time).

Each run is recorded once, keyed on the group's uid and its start (a late watch event can make
the status writer write Completed and tell it again; a Job run again under the same group has a
new start), the keys kept in a bounded LRU. A replica that starts to serve first notes every
gang already finished in its cache: their end is not known (they ended while no replica was
leading, or the leader before recorded them), so they are never recorded; and nothing is learnt
before then. Runs are buffered and written together, by the leader only (a standby never starts
this writer, and a replica that stops leading writes nothing more), at most once per `interval`
(60 s), through `kube.run_times.record` in a worker thread, which merges them into what is stored
whoever wrote it last. A failed write is a WARNING naming the ConfigMap and why; its runs are kept
for the next pass, at most `BUFFERED` of them, the oldest dropped first (said when it happens).
Runs buffered when the process ends are lost: the history is a sample of runs, and one missing
costs less than one counted twice.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable

from cachetools import LRUCache
from kubernetes import client as k8s

from extender.api import native_groups
from extender.api.log_fields import about, about_gang
from extender.api.run_times import HISTORY_NAME, HISTORY_NAMESPACE
from extender.api.scheduling import GroupKind, PodGroup
from extender.api.times import parse_time, rfc3339
from extender.cache.state import ClusterState
from extender.framework.engine import view_gang
from extender.kube import run_times
from extender.kube.run_times import Run
from extender.server.coalesce import Coalesced
from extender.server.coscheduling_status import FINISHED
from extender.server.group_status import SCHEDULED, PodGroupEvent, find_condition
from extender.server.status_writer import EventSink

log = logging.getLogger(__name__)
# (runs) -> why the stored history was unreadable and replaced, if it was; raises when not written
RunRecord = Callable[[tuple[Run, ...]], Awaitable[str | None]]

COMPLETED = "Completed"  # the Normal event of a gang that finished (`group_status.events`)
INTERVAL = 60.0  # seconds between writes, at most one per interval
BUFFERED = 4096  # runs kept while the ConfigMap cannot be written
REMEMBERED = 65536  # groups whose run is recorded (or was over before this replica served)
# What a Volcano Job's PodGroup is named after the Job's name: `-` and the Job's uid.
_JOB_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def owner_key(group: PodGroup) -> str:
    """The owner a gang's runs are recorded under (see the module's docstring)."""
    meta = group.metadata
    if group.group_kind is GroupKind.VOLCANO:
        for owner in meta.owner_names:
            prefix = f"{owner}-"
            if meta.name.startswith(prefix) and _JOB_UID.fullmatch(meta.name[len(prefix) :]):
                return f"{meta.namespace}/{owner}"
    return group.key


def started(group: PodGroup) -> str | None:
    """When the gang began to run, as its group of whichever kind says it (RFC 3339); None when
    it did not stand."""
    if group.group_kind is GroupKind.VOLCANO:
        condition = find_condition(group.status, SCHEDULED)
        if condition is None or condition.status != "True":
            return None
        return condition.last_transition_time or None
    if group.group_kind is GroupKind.NATIVE:
        lahars = native_groups.lahars_condition(group.shown)
        if lahars is None or lahars.get("status") != "True":
            return None
        return str(lahars.get("lastTransitionTime") or "") or None
    if group.shown.get("phase") != FINISHED:  # (Finished: minMember members succeeded)
        return None
    return str(group.shown.get("scheduleStartTime") or "") or None


def api_run_recorder(api: k8s.ApiClient) -> RunRecord:
    """Runs merged into the ConfigMap by `kube.run_times.record`, in a worker thread."""

    async def write(runs: tuple[Run, ...]) -> str | None:
        return await asyncio.to_thread(run_times.record, api, runs)

    return write


class RunTimesWriter(Coalesced):
    def __init__(
        self,
        state: ClusterState,
        write: RunRecord,
        *,
        ready: asyncio.Event | None = None,
        interval: float = INTERVAL,
        wall: Callable[[], float] = time.time,
        where: str = f"{HISTORY_NAMESPACE}/{HISTORY_NAME}",
    ) -> None:
        """`ready`: set while this replica serves (leads, with a whole cache); `where`: the
        ConfigMap `write` writes, as the log names it."""
        super().__init__(ready=ready, interval=interval, retry_after=interval)
        self.state, self.write, self.wall, self.where = state, write, wall, where
        self.on_recorded: Callable[[int], None] = lambda count: None
        self.on_failed: Callable[[], None] = lambda: None
        self._runs: list[Run] = []
        # PodGroup uid -> the start of its run already accounted for (None: any start, as
        # for a gang that had finished before this replica served)
        self._seen: LRUCache[str, str | None] = LRUCache(maxsize=REMEMBERED)
        self._attached = False

    @property
    def buffered(self) -> tuple[Run, ...]:
        """The runs learnt and not written yet, oldest first."""
        return tuple(self._runs)

    def attach(self) -> None:
        """Note the gangs already finished (call on the event loop, once this replica serves:
        the cache is whole)."""
        super().attach()
        for key, group in list(self.state.pod_groups.items()):
            gang = view_gang(self.state, key)
            over = not gang.placed and not gang.pending and (gang.succeeded or gang.failed)
            if over or group.status.phase == COMPLETED:
                self._seen[group.metadata.uid] = None
        self._attached = True

    def watching(self, sink: EventSink) -> EventSink:
        """`sink`, with this writer told each event first."""

        async def record(group: PodGroup, event: PodGroupEvent) -> None:
            if event.type == "Normal" and event.reason == COMPLETED:
                current = self.state.pod_groups.get(group.key)
                same = current is not None and current.metadata.uid == group.metadata.uid
                self.finished(current if current is not None and same else group)
            await sink(group, event)

        return record

    def finished(self, group: PodGroup) -> None:
        """The gang of `group` (as its status now says) was just seen Completed."""
        if not self._attached:
            return  # not serving yet: its end is not this replica's to tell
        key, uid = group.key, group.metadata.uid
        since = started(group)
        start = parse_time(since)
        if since is None or start is None:
            log.debug("gang %s finished without a whole run: no run time", key)
            return
        if uid in self._seen and self._seen[uid] in (None, since):
            return  # recorded already, or over before this replica served
        self._seen[uid] = since
        end = self.wall()
        if end < start:
            log.info(
                "gang %s: no run time: it finished at %s, before it started (%s) by this clock",
                key,
                rfc3339(end),
                since,
                extra=about_gang(key, queue=group.queue),
            )
            return
        owner = owner_key(group)
        log.debug("gang %s (owner %s) ran %.0f s", key, owner, end - start)
        self._keep([(owner, group.queue, end - start, end)])
        self.poke()

    async def flush(self) -> None:
        if not self._runs:
            return
        if self.ready is not None and not self.ready.is_set():
            return  # no longer leading (the process is ending): nothing more is written
        runs, self._runs = tuple(self._runs), []
        try:
            replaced = await self.write(runs)
        except Exception as error:  # the API refused or is away: keep them for the next pass
            self.on_failed()
            self._runs, new = list(runs), self._runs
            self._keep(new)
            log.warning(
                "could not record %d finished runs in ConfigMap %s (kept for the next try in "
                "%.0f s): %s",
                len(runs),
                self.where,
                self.interval,
                error,
                extra=about("ConfigMap", self.where),
            )
            self.poke()
            return
        self.on_recorded(len(runs))
        if replaced is not None:
            log.warning(
                "%s; replaced by a history of the runs recorded now",
                replaced,
                extra=about("ConfigMap", self.where),
            )
        log.info(
            "ConfigMap %s: %d finished runs recorded",
            self.where,
            len(runs),
            extra=about("ConfigMap", self.where),
        )

    def _keep(self, runs: list[Run]) -> None:
        """Buffer `runs`, the oldest dropped beyond `BUFFERED` (said)."""
        self._runs.extend(runs)
        over = len(self._runs) - BUFFERED
        if over > 0:
            del self._runs[:over]
            log.warning(
                "dropped the %d oldest finished runs not yet recorded in ConfigMap %s: at most "
                "%d are kept while it cannot be written",
                over,
                self.where,
                BUFFERED,
                extra=about("ConfigMap", self.where),
            )
