"""Writing PodGroup status and events, coalesced: one write per gang per pass, not per member.

Gang changes (a member created, bound, finished or gone; a PodGroup created; a gang admitted,
released or rejected for a new reason) only *mark* the gang. A background task wakes on the first
mark, waits `interval` so that what else happens meanwhile joins the same pass, then for each marked
gang derives the status (`server.group_status`; a waiting gang's Unschedulable condition carries
the summary of `framework.explain.condition_message`, rewritten too when a reservation it names
ends; a reservation made elsewhere does not rewrite every waiting gang's condition, which would be a
write per waiting gang per admission: `lahar explain --extender` says it live), writes it when it
differs from what the API shows, and records the events the change deserves. A 1,000-pod gang that
binds in one second is written a few times, not a thousand. The written status also goes onto the
cached PodGroup at once, so the next pass compares against it before the watch delivers it (a late
watch event carrying an older status can still cause one rewrite and repeat its events). No pass
runs before `ready` (the cache is whole): a status derived from PodGroups listed before their pods
would be wrong.

Given the scheduler names the extender serves (`schedulers`), a PodGroup whose pods all name
other schedulers is another scheduler's (Volcano's `volcano`, while both run during a migration):
its status is left to that scheduler. A PodGroup with no pods yet says nothing of whose it is: a
Volcano one is left alone unless `volcano` is served (Volcano's scheduler enqueues every Volcano
PodGroup, and Volcano's job controller creates a Job's pods only once its PodGroup is no longer
Pending), a group of another kind is written. Volcano's own PodGroup CRD serves no status
subresource (Volcano's scheduler writes the whole object): while Volcano's scheduler runs (Lahar
does not answer to `volcano`), a status Lahar cannot write there is left to it, said once per
group; with Lahar answering to `volcano`, the writer puts it onto the object itself
(`server.adapters.api_status_patch`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from cachetools import LRUCache

from extender.api import coscheduling, native_groups
from extender.api.job_pods import is_expected
from extender.api.log_fields import about_gang
from extender.api.scheduling import VOLCANO_SCHEDULER, GroupKind, PodGroup, PodGroupStatus
from extender.cache.events import GangChanged, PodGroupChanged
from extender.cache.state import ClusterState
from extender.framework.engine import (
    Engine,
    GangAdmitted,
    GangRejected,
    GangReleased,
    GangShown,
    GangView,
    Rejection,
    view_gang,
)
from extender.framework.explain import condition_message
from extender.kube.reports import NoStatusSubresource, utc_now
from extender.server.coalesce import Coalesced
from extender.server.group_status import PodGroupEvent, events, group_status, same_status
from extender.server.shown_status import shown_status, status_patch

log = logging.getLogger(__name__)
# (group, status): the status, in the group's kind's own fields (`server.shown_status`), onto that
# very PodGroup (its uid), not one of the same name created meanwhile
StatusPatch = Callable[[PodGroup, dict[str, Any]], Awaitable[None]]
# The Volcano phase each other kind's status reads as (what its adapter makes of it).
SHOWN_PHASE = {
    GroupKind.COSCHEDULING: coscheduling.volcano_phase,
    GroupKind.NATIVE: native_groups.volcano_phase,
}
EventSink = Callable[[PodGroup, PodGroupEvent], Awaitable[None]]


class StatusWriter(Coalesced):
    def __init__(
        self,
        state: ClusterState,
        engine: Engine,
        write: StatusPatch,
        record: EventSink,
        *,
        ready: asyncio.Event | None = None,
        interval: float = 0.5,
        retry_after: float = 5.0,
        now: Callable[[], str] = utc_now,
        wall: Callable[[], float] = time.time,
        schedulers: Collection[str] | None = None,
    ) -> None:
        """`schedulers`: the scheduler names served, read as they are at each pass (the gang
        rules learn more from the calls); None: every PodGroup is Lahar's."""
        super().__init__(ready=ready, interval=interval, retry_after=retry_after)
        self.state, self.engine, self.write, self.record = state, engine, write, record
        self.schedulers = schedulers
        self.now, self.wall = now, wall
        self._dirty: set[str] = set()
        # Gang with a reservation -> waiting gangs whose condition names it: rewritten when that
        # reservation ends, so no condition names a gang that reserves nothing.
        self._named: dict[str, set[str]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # PodGroup uid -> the status last derived for a group of another kind than Volcano's
        self._derived: LRUCache[str, PodGroupStatus] = LRUCache(maxsize=65536)
        # PodGroup uids whose CRD serves no status subresource, said once each
        self._left: LRUCache[str, bool] = LRUCache(maxsize=65536)

    def attach(self) -> None:
        """Listen to the gang rules and the state (call on the event loop)."""
        super().attach()
        self.engine.events.subscribe(GangAdmitted, lambda event: self._shown_inqueue(event.key))
        self.engine.events.subscribe(GangShown, lambda event: self._shown_inqueue(event.key))
        self.engine.events.subscribe(GangReleased, lambda event: self.mark(event.key))
        self.engine.events.subscribe(GangRejected, lambda event: self.mark(event.key))
        self.state.events.subscribe(GangChanged, lambda event: self.mark(event.key))
        self.state.events.subscribe(PodGroupChanged, lambda event: self.mark(event.key))

    def mark(self, key: str) -> None:
        self._dirty.add(key)
        if key in self._named and self.engine.admission(key) is None:
            self._dirty |= self._named.pop(key)
        self.poke()

    def _shown_inqueue(self, key: str) -> None:
        """The gang goes Inqueue (admitted, or shown to the scheduler for nodes): written at once
        when its Job waits for that to create its pods (`cache.expected`)."""
        self.mark(key)
        if any(is_expected(pod.metadata.uid) for pod in view_gang(self.state, key).pending):
            self.hurry()

    def mark_all(self) -> None:
        for key in list(self.state.pod_groups):
            self.mark(key)

    def announce(self, key: str, event: PodGroupEvent) -> None:
        """Record a one-off event on the gang's PodGroup (in the background)."""
        group = self.state.pod_groups.get(key)
        if group is not None:
            task = asyncio.get_running_loop().create_task(self._record(key, group, event))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        keys, self._dirty = sorted(self._dirty), set()
        for key in keys:
            try:
                await self._sync(key)
            except Exception:  # a bug must not end the writer: say so, try the gang again later
                log.exception(
                    "could not bring the status of PodGroup %s up to date",
                    key,
                    extra=about_gang(key),
                )
                self._retry(key)

    def _retry(self, key: str) -> None:
        self.later(lambda: self.mark(key))

    async def _sync(self, key: str) -> None:
        group = self.state.pod_groups.get(key)
        if group is None:
            return
        gang = view_gang(self.state, key)
        if not self._served(gang):
            return
        admitted = self.engine.admission(key) is not None
        rejection = self._why_waiting(gang, admitted)
        volcano = group.group_kind is GroupKind.VOLCANO
        # (a group of another kind shows its status in its own fields: what was derived for it
        # last is remembered here, for the conditions' times and the events a change deserves)
        previous = group.status if volcano else self._derived.get(group.metadata.uid, group.status)
        wanted = group_status(
            gang,
            admitted=admitted,
            rejection=rejection,
            previous=previous,
            now=self.now(),
            shown=self.engine.shown(key),
        )
        if volcano and same_status(wanted, previous):
            return
        kind, shown = group.group_kind, group.shown
        status = shown_status(kind, wanted, gang, admitted=admitted, shown=shown, now=self.now())
        patch = status if volcano else status_patch(kind, status, shown)
        if patch is not None and not await self._written(key, group, patch):
            return
        if wanted.phase != previous.phase:
            log.info(
                "PodGroup %s: phase %s -> %s",
                key,
                previous.phase or "-",
                wanted.phase,
                extra=about_gang(key),
            )
        if not volcano:
            self._derived[group.metadata.uid] = wanted
        current = self.state.pod_groups.get(key)  # the watch may have moved on during the write
        if patch is not None and current is not None and current.metadata.uid == group.metadata.uid:
            if volcano:
                update: dict[str, Any] = {"status": wanted}
            else:
                phase = current.status.model_copy(update={"phase": wanted.phase})
                merged = {**shown, **patch}  # (a merge patch: null removes the field)
                shows = {field: value for field, value in merged.items() if value is not None}
                update = {"shown": shows, "status": phase}
            self.state.upsert_pod_group(current.model_copy(update=update))
        for event in events(previous, wanted, key):
            await self._record(key, group, event)

    async def _written(self, key: str, group: PodGroup, patch: dict[str, Any]) -> bool:
        """Write `patch`; False when it was not (tried again later, unless the status is left to
        Volcano's scheduler)."""
        try:
            await self.write(group, patch)
        except NoStatusSubresource as error:  # Volcano's CRD, Volcano's scheduler running
            if group.metadata.uid not in self._left:
                self._left[group.metadata.uid] = True
                log.info(
                    "PodGroup %s: status left to Volcano's scheduler (%s)",
                    key,
                    error,
                    extra=about_gang(key),
                )
            return False
        except Exception as error:  # an API hiccup: try again later; a deleted group is skipped
            log.warning(
                "could not write status of PodGroup %s: %s", key, error, extra=about_gang(key)
            )
            self._retry(key)
            return False
        return True

    def _served(self, gang: GangView) -> bool:
        """Whether the gang is Lahar's to write (see the module docstring)."""
        if self.schedulers is None:
            return True
        pods = [*gang.pending, *gang.placed, *gang.succeeded, *gang.failed]
        if pods:
            return any(pod.spec.scheduler_name in self.schedulers for pod in pods)
        volcano = gang.group is not None and gang.group.group_kind is GroupKind.VOLCANO
        return not volcano or VOLCANO_SCHEDULER in self.schedulers

    def _why_waiting(self, gang: GangView, admitted: bool) -> Rejection | None:
        """Why the gang waits, with the message its condition says; None: it does not."""
        key = gang.key
        waiting = self.engine.refusal(key)
        rejection = None if waiting is None or admitted or gang.stands else waiting.rejection
        if rejection is None and not admitted and not gang.stands:
            # (released with a backoff: its members did not all come; no verdict says so)
            rejection = self.engine.backing_off(key)
        if rejection is not None:  # the condition says all that explains the wait
            message = condition_message(self.state, self.engine, gang, rejection, self.wall())
            rejection = dataclasses.replace(rejection, message=message)
            for holder in self.engine.admitted():
                if holder != key:
                    self._named.setdefault(holder, set()).add(key)
        return rejection

    async def _record(self, key: str, group: PodGroup, event: PodGroupEvent) -> None:
        try:
            await self.record(group, event)
        except Exception as error:  # events are best effort: the status and the log say it too
            log.warning(
                "could not record event %s of %s: %s",
                event.reason,
                key,
                error,
                extra=about_gang(key),
            )
