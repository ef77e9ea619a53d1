"""List+watch loops that keep the cluster state current, without blocking the event loop.

Each watched kind gets an `Informer`: a daemon thread runs the blocking list and watch (through the
kube layer) and decodes each event straight into the state's model with pydantic; the decoded
object is handed to the event loop (`call_soon_threadsafe`), where the only writer of the state
applies it. So decisions on the loop never see a half-applied event and never wait for the network.

The loop of one informer: list (a full replace of that kind in the state, which marks it synced),
then watch from the list's resourceVersion; every event and bookmark moves the version forward, so
a watch the server ends, or a dropped connection, resumes where it stopped. A 410 Gone lists again.
Errors (the API server restarting, a network fault) are logged and retried with capped exponential
backoff, never fatal. A kind only some clusters serve (`Kind.optional`: Coscheduling's CRD, the
native PodGroups of Kubernetes 1.37, Cluster Autoscaler's ProvisioningRequests) that answers 404
(or 403: the role does not grant it) when first listed counts as listed and empty, and is looked
for again every `ABSENT_RECHECK` seconds; once listed, it is dropped only when the 404s last that
long.

An object the informer cannot read is skipped, the others applied, with one line naming it by its
Kind (`Pod default/w-0`, from a list as from a watch) and the field. Its level says whose fault it
is. A built-in kind's object (a Pod, Node or PriorityClass: `Kind.built_in`) was validated by
kube-apiserver against the kind's whole schema, so Lahar's model refusing it is a bug in Lahar,
and a costly one (a pod left out is capacity counted free; a DELETED event skipped leaves a pod
that is gone in the cache): an ERROR. A CRD's object (a Volcano PodGroup, Queue or HyperNode) was
checked only against the CRD's schema, which lets through what Lahar's model refuses: its author's
mistake, a WARNING.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Generic, Literal, TypeVar

from kubernetes import client as k8s
from kubernetes.client.rest import RESTResponse
from pydantic import BaseModel, ValidationError

from extender.api.log_fields import Extra, about
from extender.api.objects import KubeModel
from extender.cache.kinds import KINDS, Kind
from extender.kube.raw import ApiStatusError
from extender.kube.watch import Gone, interrupt, list_pages, watch_lines

log = logging.getLogger(__name__)
M = TypeVar("M", bound=KubeModel)
S = TypeVar("S")  # the store the events land in: the extender's ClusterState, the controller's own


class WatchEvent(BaseModel, Generic[M]):
    type: str
    object: M


class _BookmarkMeta(BaseModel):
    resourceVersion: str = ""


class _BookmarkObject(BaseModel):
    metadata: _BookmarkMeta = _BookmarkMeta()


class Bookmark(BaseModel):
    """A watch BOOKMARK: no object, only the resourceVersion the watch has reached (the rest of
    what the API server sends, an empty object of the kind, is not one Lahar can read)."""

    type: Literal["BOOKMARK"]
    object: _BookmarkObject


BOOKMARK = b'"type":"BOOKMARK"'


ABSENT_RECHECK = 60.0  # seconds between looks for an optional kind the API server does not serve
# What becomes of an object Lahar cannot read, by the event that carried it (a list's: ADDED).
SKIPPED = {
    "ADDED": "it is left out of the cache",
    "MODIFIED": "the cache keeps its previous version",
    "DELETED": "the cache keeps it, though it is gone",
}


class Informer(Generic[S, M]):
    def __init__(
        self,
        api: k8s.ApiClient,
        kind: Kind[S, M],
        state: S,
        loop: asyncio.AbstractEventLoop,
        *,
        watch_timeout: int = 300,
        max_backoff: float = 5.0,
    ) -> None:
        self.api, self.kind, self.state, self.loop = api, kind, state, loop
        self.watch_timeout, self.max_backoff = watch_timeout, max_backoff
        self.synced = False
        self.on_synced: Callable[[], None] = lambda: None  # after the first full list (on the loop)
        self.version: str | None = None  # the last resourceVersion seen; None: list first
        self.relists = 0
        self.reconnects = 0
        self.bookmarks = 0
        self.watches = 0  # watches opened
        self.watched_from: str | None = None  # the resourceVersion the last watch began at
        self.absent = False  # an optional kind the API server does not serve (yet)
        self.absent_recheck = ABSENT_RECHECK
        self._missing_since: float | None = None  # the first of the 404s of a kind listed before
        self._events = WatchEvent[kind.model]  # type: ignore[name-defined]
        self._stop = threading.Event()
        self._response: RESTResponse | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{kind.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def interrupt(self) -> None:
        """Close the current watch connection, as a network fault would; the watch resumes from
        the last resourceVersion it saw."""
        response = self._response
        if response is not None:
            interrupt(response)

    def stop(self, timeout: float = 5.0) -> None:
        self.request_stop()
        self.interrupt()  # unblocks the thread's read
        self._thread.join(timeout)

    # -- the watch thread ----------------------------------------------------------------------

    def _run(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            try:
                if self.version is None:
                    self.version = self._list()
                self._watch(self.version)
                backoff = 0.2
            except Gone:
                log.info(
                    "watch of %s: resourceVersion %s is too old; listing again",
                    self.kind.name,
                    self.version,
                )
                self.version = None
            except Exception as error:  # the API server restarting, a reset connection, ...
                if self._stop.is_set():
                    return
                if self._not_served(error):
                    self._absent(error)
                    continue
                self.reconnects += 1
                log.warning(
                    "watch of %s failed (%s); retrying in %.1fs from resourceVersion %s",
                    self.kind.name,
                    error,
                    backoff,
                    self.version or "(list)",
                )
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)

    def _not_served(self, error: Exception) -> bool:
        """Whether `error` says this optional kind is not served: a 404 before it was ever
        listed, or 404s lasting `absent_recheck` seconds since (an API server that has just
        restarted answers 404 for a CRD's objects until it has read the CRDs again: the kind's
        objects are kept through that); or a 403, a role that does not grant it yet (an upgrade
        whose RBAC was not applied must not keep the replica from ever serving)."""
        if not (self.kind.optional and isinstance(error, ApiStatusError)):
            self._missing_since = None
            return False
        if error.status == 403:  # (a role from before the kind was read: go on without it)
            return True
        if error.status != 404:
            self._missing_since = None
            return False
        if not self.synced or self.absent:
            return True
        now = time.monotonic()
        if self._missing_since is None:
            self._missing_since = now
        return now - self._missing_since >= self.absent_recheck

    def _absent(self, error: Exception) -> None:
        """The API server does not serve this optional kind (or does not let Lahar read it): it
        holds nothing; look again later (a CRD installed, an API enabled, the role granted)."""
        if not self.absent and isinstance(error, ApiStatusError) and error.status == 403:
            log.warning(
                "not allowed to list %s (%s): going on without them; apply the role in "
                "manifests/ to have Lahar read them (checked every %.0fs)",
                self.kind.name,
                error,
                self.absent_recheck,
            )
        elif not self.absent:
            log.info(
                "%s are not served by this cluster; Lahar reads them once they are "
                "(checked every %.0fs)",
                self.kind.name,
                self.absent_recheck,
            )
        self.absent = True
        self.version = None
        self._post(self._replace, [])
        self._stop.wait(self.absent_recheck)

    def _list(self) -> str:
        items, version = list_pages(self.api, self.kind.path, self.kind.selector)
        objects = list(self._decode_all(items))
        if self.absent:
            log.info("%s are served now: listed them", self.kind.name)
            self.absent = False
        self._missing_since = None
        self.relists += 1
        self._post(self._replace, objects)
        log.info("listed %d %s at resourceVersion %s", len(objects), self.kind.name, version)
        return version

    def _watch(self, version: str) -> None:
        """Follow the watch, moving `self.version` with every event and bookmark, so a watch that
        breaks (not only one the server ends) resumes from the last event applied."""
        self.watched_from = version
        lines = watch_lines(
            self.api,
            self.kind.path,
            version,
            selector=self.kind.selector,
            timeout_seconds=self.watch_timeout,
            on_open=self._opened,
        )
        try:
            for line in lines:
                if BOOKMARK in line[:32]:  # (the API server writes "type" first)
                    self._bookmark(line)
                    continue
                try:
                    event = self._events.model_validate_json(line)
                except ValidationError as error:
                    happened, item = _event_of(line)
                    self._skip("watch", item, error, SKIPPED.get(happened, "the event is skipped"))
                    continue
                self.version = event.object.metadata.resource_version or self.version
                if event.type in ("ADDED", "MODIFIED"):
                    self._post(self.kind.upsert, event.object)
                elif event.type == "DELETED":
                    self._post(self.kind.delete, event.object)
        finally:
            self._response = None

    def _bookmark(self, line: bytes) -> None:
        """The watch has reached a resourceVersion with nothing to tell: resume from there, so a
        watch that ends does not resume from an older version (gone after compaction: a relist)."""
        try:
            version = Bookmark.model_validate_json(line).object.metadata.resourceVersion
        except ValidationError as error:
            log.warning("watch of %s: a bookmark Lahar cannot read: %s", self.kind.name, error)
            return
        self.version = version or self.version
        self.bookmarks += 1

    def _opened(self, response: RESTResponse) -> None:
        self._response = response
        self.watches += 1
        if self._stop.is_set():
            interrupt(response)

    def _decode_all(self, items: Iterable[dict[str, Any]]) -> Iterable[M]:
        for item in items:
            try:
                yield self.kind.model.model_validate(item)
            except ValidationError as error:
                self._skip("list", item, error, SKIPPED["ADDED"])

    def _skip(self, where: str, item: object, error: ValidationError, outcome: str) -> None:
        """Log the object `item` (plain JSON) that Lahar's model refuses with `error`, skipped by
        the `where` (`list`, `watch`) of this kind with `outcome` (see the module's docstring for
        the level)."""
        named, subject = self._unreadable(item)
        level, why = (
            (
                logging.ERROR,
                "Lahar's model refuses %s, which the API server accepted (a bug in Lahar)",
            )
            if self.kind.built_in
            else (
                logging.WARNING,
                "skipping %s, which Lahar cannot read (its author's mistake: the CRD's schema let "
                "it through)",
            )
        )
        log.log(
            level,
            f"%s of %s: {why}; %s: %s",
            where,
            self.kind.name,
            named,
            outcome,
            error,
            extra=subject,
        )

    def _unreadable(self, item: object) -> tuple[str, Extra]:
        """An object that does not parse, as a log line names it: its Kind and `namespace/name`
        (`Pod default/w-0`; only the Kind when even the name cannot be read), and its `extra`."""
        fields = item if isinstance(item, dict) else {}
        own = fields.get("kind")
        kind = self.kind.object_kind or (own if isinstance(own, str) and own else self.kind.name)
        metadata = fields.get("metadata")
        meta = metadata if isinstance(metadata, dict) else {}
        name, namespace = meta.get("name"), meta.get("namespace")
        if not isinstance(name, str) or not name:
            return f"a {kind} whose name cannot be read", about(kind, "")
        key = f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
        return f"{kind} {key}", about(kind, key)

    def _post(self, apply: Callable[[S, Any], None], value: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(apply, self.state, value)
        except RuntimeError:  # the loop has closed: we are shutting down
            self._stop.set()

    # -- on the loop ---------------------------------------------------------------------------

    def _replace(self, state: S, objects: list[M]) -> None:
        self.kind.replace(state, objects)
        if not self.synced:
            self.synced = True
            self.on_synced()


class Informers(Generic[S]):
    """Informers of several kinds into one store, started and stopped together (the extender's
    cluster state by default; the controller and the webhook pass their own store and kinds)."""

    def __init__(
        self,
        api: k8s.ApiClient,
        state: S,
        loop: asyncio.AbstractEventLoop,
        kinds: Iterable[Kind[S, Any]] | None = None,
    ) -> None:
        chosen: Iterable[Kind[Any, Any]] = KINDS if kinds is None else kinds
        self.items: list[Informer[S, Any]] = [Informer(api, kind, state, loop) for kind in chosen]
        # Called once (on the loop) when every kind has been listed: the state is whole.
        self.on_synced: list[Callable[[], None]] = []
        for informer in self.items:
            informer.on_synced = self._informer_synced

    def _informer_synced(self) -> None:
        if self.synced:
            for callback in self.on_synced:
                callback()

    @property
    def synced(self) -> bool:
        return all(informer.synced for informer in self.items)

    def start(self) -> None:
        for informer in self.items:
            informer.start()

    def stop(self) -> None:
        for informer in self.items:
            informer.request_stop()
        for informer in self.items:
            informer.stop()


def _event_of(line: bytes) -> tuple[str, object]:
    """The type and the object of a watch event as plain JSON ("" and None when not there)."""
    try:
        event = json.loads(line)
    except ValueError:
        return "", None
    if not isinstance(event, dict):
        return "", None
    kind = event.get("type")
    return kind if isinstance(kind, str) else "", event.get("object")
