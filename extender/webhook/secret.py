"""The Secret the webhook keeps its certificates in: brought to what the rotation wants (`keep`),
created again when it is gone, and followed (`SecretWatch`) so a change is seen within a second.

`keep` reads the Secret and asks `step` (one rotation step of `pki`) what to store: nothing (what
is stored is right), or new data, written over the Secret at the resourceVersion read, or created
when there is none. Every replica does the same, so the API server decides who wins: a replica
whose replace or create conflicts reads again and takes what the winner wrote. What happened is
a value, `Outcome`; only I/O failures (the API server away, a refusal) raise.

A deleted Secret is created again by server-side apply of that one name, never by POST: the API
server authorizes an apply that creates as `create` *of that name*, so the webhook's RBAC names
the Secret for create too (a POST names no object until its body is read, so RBAC cannot limit it
to a name). Each process applies as a field manager of its own and never forces: when another
replica created the Secret first, the data it owns conflicts (409), the same signal as a create
that finds the name taken.

`SecretWatch` lists and watches the Secret, narrowed to its name by a field selector (which RBAC's
resourceNames authorize for list and watch), in a daemon thread, and calls `changed` on the event
loop after each list and on each event: the webhook then checks the Secret at once instead of at
its next periodic check. A watch that fails (the API server away, RBAC without list and watch) is
retried with backoff; the periodic check runs meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from kubernetes import client as k8s
from kubernetes.client.rest import RESTResponse

from extender.kube.client import KubeError
from extender.kube.secrets import Step, apply_new_secret, secret_data, write_secret
from extender.kube.watch import Gone, interrupt, list_pages, watch_lines
from extender.kube.writes import get, object_path

log = logging.getLogger(__name__)
ATTEMPTS = 5  # reads and writes of one `keep` before it gives up (the Secret kept changing)


class Outcome(Enum):
    UNCHANGED = "unchanged"  # what is stored is right: served as it is
    REPLACED = "replaced"  # this replica wrote the next step over the Secret it read
    CREATED = "created"  # there was no Secret: this replica created it
    ADOPTED = "adopted"  # there was none, and another replica created it first: served as is


@dataclass(frozen=True)
class Kept:
    data: dict[str, bytes]  # what the Secret holds now
    outcome: Outcome


class SecretIo(Protocol):
    """The three requests `keep` makes; a conflict is False, any other failure raises."""

    def get(self) -> dict[str, Any] | None:
        """The Secret as stored, or None when there is none."""

    def create(self, data: dict[str, bytes]) -> bool:
        """Create the Secret holding `data`; False when another writer created it first."""

    def replace(self, stored: dict[str, Any], data: dict[str, bytes]) -> bool:
        """Store `data` in the Secret as it was read; False when it changed since."""


def keep(io: SecretIo, step: Step, *, what: str = "the certificate Secret") -> Kept:
    """The Secret's data once `step` has nothing more to do for it now, and how it got there:
    `step(data)` (None when there is no Secret) returns the data to store, or None when what is
    stored is right. A conflict reads again, `ATTEMPTS` times at most. `what` names the Secret
    in errors."""
    missing = False  # the Secret was gone at one read (another replica may have filled it since)
    for _ in range(ATTEMPTS):
        secret = io.get()
        stored = None if secret is None else secret_data(secret)
        missing = missing or secret is None
        following = step(stored)
        if following is None:
            if stored is None:
                raise KubeError(f"{what} is missing and nothing fills it")
            return Kept(stored, Outcome.ADOPTED if missing else Outcome.UNCHANGED)
        if secret is None:
            if io.create(following):
                return Kept(following, Outcome.CREATED)
        elif io.replace(secret, following):
            return Kept(following, Outcome.REPLACED)
    raise KubeError(f"{what} kept changing under this replica")


class SecretApi:
    """`SecretIo` for the Secret `namespace`/`name` on the API server."""

    def __init__(
        self, api: k8s.ApiClient, namespace: str, name: str, *, labels: dict[str, str]
    ) -> None:
        self.api, self.namespace, self.name, self.labels = api, namespace, name, labels
        # Unique to this process: an apply by another replica's manager conflicts with its own.
        self.manager = f"lahar-webhook-{secrets.token_hex(4)}"

    def get(self) -> dict[str, Any] | None:
        return get(self.api, "v1", "Secret", self.namespace, self.name)

    def create(self, data: dict[str, bytes]) -> bool:
        # Not forced: another replica's apply conflicts (False), and it is authorized as the
        # create of this one name.
        return apply_new_secret(
            self.api, self.namespace, self.name, data, labels=self.labels, manager=self.manager
        )

    def replace(self, stored: dict[str, Any], data: dict[str, bytes]) -> bool:
        return write_secret(
            self.api, self.namespace, self.name, data, stored=stored, labels=self.labels
        )


def event_version(line: bytes) -> tuple[str, str]:
    """The type of a watch event line and the resourceVersion of its object ("" when absent);
    ValueError when the line is not an event."""
    event = json.loads(line)
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise ValueError("not a watch event")
    meta = (event.get("object") or {}).get("metadata") or {}
    return event["type"], str(meta.get("resourceVersion") or "")


class SecretWatch:
    """Calls `changed` on `loop` after each list of the Secret and on each event of its watch."""

    def __init__(
        self,
        api: k8s.ApiClient,
        namespace: str,
        name: str,
        changed: Callable[[], None],
        loop: asyncio.AbstractEventLoop,
        *,
        watch_timeout: int = 300,
        max_backoff: float = 30.0,
    ) -> None:
        self.api, self.changed, self.loop = api, changed, loop
        self.what = f"Secret {namespace}/{name}"
        self.path = object_path("v1", "Secret", namespace)
        self.fields = f"metadata.name={name}"  # (what resourceNames authorize a list and watch by)
        self.watch_timeout, self.max_backoff = watch_timeout, max_backoff
        self._stop = threading.Event()
        self._response: RESTResponse | None = None
        self._thread = threading.Thread(target=self._run, name="watch-certificates", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop without waiting (the thread is a daemon): a blocked read is interrupted."""
        self._stop.set()
        response = self._response
        if response is not None:
            interrupt(response)

    def _run(self) -> None:
        backoff, version = 1.0, ""
        while not self._stop.is_set():
            try:
                if not version:
                    _, version = list_pages(self.api, self.path, fields=self.fields)
                    self._post()  # (deleted, or changed, while nothing watched)
                version = self._follow(version)
                backoff = 1.0
            except Gone:
                version = ""
            except Exception as error:  # the API server restarting, a reset connection, 403
                if self._stop.is_set():
                    return
                log.warning(
                    "watch of %s failed (%s); retrying in %.0f s, checking it periodically "
                    "meanwhile",
                    self.what,
                    error,
                    backoff,
                )
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)

    def _follow(self, version: str) -> str:
        """Watch from `version` until the server ends the watch; the last version seen."""
        lines = watch_lines(
            self.api,
            self.path,
            version,
            fields=self.fields,
            timeout_seconds=self.watch_timeout,
            on_open=self._opened,
        )
        try:
            for line in lines:
                kind, seen = event_version(line)
                version = seen or version
                if kind != "BOOKMARK":
                    self._post()
        finally:
            self._response = None
        return version

    def _opened(self, response: RESTResponse) -> None:
        self._response = response
        if self._stop.is_set():
            interrupt(response)

    def _post(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.changed)
        except RuntimeError:  # the loop has closed: the process is ending
            self._stop.set()
