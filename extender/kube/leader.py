"""Leader election over a coordination.k8s.io Lease, and following a Lease another holds.

`Elector` competes for a Lease with the Kubernetes client's own elector. The elector blocks, so it
runs in a daemon thread; `leading` (an asyncio.Event) is set on the event loop once this process
holds the Lease. Losing the Lease (a renewal not done within the renew deadline: the API server
unreachable, the process stalled) calls `on_lost` on the loop: the controller and the extender then
stop, as client-go's controllers do, so two leaders never act at once. A standby takes over at most
`lease_seconds` after the leader stopped renewing.

`LeaseFollower` holds nothing: it watches a Lease another process holds (kube-scheduler's own, for
the extender beside it in its pod) and reports each holder it sees, so the extender works while the
scheduler it serves leads, without a second, independent election that could disagree with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from extender.kube.watch import Gone, list_pages, watch_lines

log = logging.getLogger(__name__)
# The elector logs every renewal at INFO; this module says what an operator needs.
logging.getLogger("leaderelection").setLevel(logging.WARNING)


@dataclass(frozen=True)
class LeaseOptions:
    name: str
    namespace: str
    identity: str
    lease_seconds: int = 15
    renew_seconds: int = 10
    retry_seconds: int = 2


class Elector:
    def __init__(
        self,
        api: k8s.ApiClient,
        options: LeaseOptions,
        leading: asyncio.Event,
        on_lost: Callable[[], None],
    ) -> None:
        """Call on the event loop: `leading` is set there when this process leads."""
        self.options, self.leading, self.on_lost = options, leading, on_lost
        self.loop = asyncio.get_running_loop()
        lock = LeaseLock(options.name, options.namespace, options.identity)
        lock.api_instance = k8s.CoordinationV1Api(api)  # this client, not the process default
        self._config = electionconfig.Config(
            lock,
            lease_duration=options.lease_seconds,
            renew_deadline=options.renew_seconds,
            retry_period=options.retry_seconds,
            onstarted_leading=self._started,
            onstopped_leading=self._stopped,
        )
        self._released = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)

    def start(self) -> None:
        log.info(
            "waiting to lead: Lease %s/%s as %s",
            self.options.namespace,
            self.options.name,
            self.options.identity,
        )
        self._thread.start()

    def _run(self) -> None:
        elector = leaderelection.LeaderElection(self._config)
        try:
            elector.run()
        except Exception:  # the elector catches API errors only, not a refused connection
            log.exception("leader election failed")
        finally:
            if not self._released.is_set():  # it ended without telling us: we may not lead
                self._stopped()

    def _started(self) -> None:
        log.info("leading: holding Lease %s/%s", self.options.namespace, self.options.name)
        self.loop.call_soon_threadsafe(self.leading.set)
        self._released.wait()  # the elector renews in its own thread while this blocks

    def _stopped(self) -> None:
        self._released.set()
        log.error("lost Lease %s/%s: stopping", self.options.namespace, self.options.name)
        with contextlib.suppress(RuntimeError):  # a closed loop: already stopping
            self.loop.call_soon_threadsafe(self.on_lost)


@dataclass(frozen=True)
class FollowOptions:
    """Another process's Lease to follow: the one kube-scheduler holds while it schedules, and
    the identity its holder has when it is the scheduler beside this process (kube-scheduler's
    identity is `<hostname>_<uuid>`: the pod's hostname, which every container of a pod shares)."""

    name: str
    namespace: str
    identity: str

    def ours(self, holder: str) -> bool:
        return holder.startswith(f"{self.identity}_")


class LeaseFollower:
    """Watches one Lease (its name as a field selector) and hands each holder identity it sees
    to `seen` on the event loop ("" while nobody holds it, or it does not exist). The list and
    watch block, so they run in a daemon thread; errors are retried with backoff, a 410 lists
    again."""

    def __init__(self, api: k8s.ApiClient, options: FollowOptions, seen: Callable[[str], None]):
        """Call on the event loop."""
        self.api, self.options, self.seen = api, options, seen
        self.loop = asyncio.get_running_loop()
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{options.namespace}/leases"
        self._fields = f"metadata.name={options.name}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-follower", daemon=True)

    def start(self) -> None:
        log.info(
            "following Lease %s/%s: leading while its holder is %s_*",
            self.options.namespace,
            self.options.name,
            self.options.identity,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        backoff = 0.2
        version: str | None = None
        while not self._stop.is_set():
            try:
                if version is None:
                    items, version = list_pages(self.api, self._path, fields=self._fields)
                    self._post(items[0] if items else None)
                for line in watch_lines(
                    self.api, self._path, version, fields=self._fields, timeout_seconds=60
                ):
                    event = json.loads(line)
                    lease = event.get("object") or {}
                    version = (lease.get("metadata") or {}).get("resourceVersion") or version
                    if event.get("type") == "DELETED":
                        self._post(None)
                    elif event.get("type") in ("ADDED", "MODIFIED"):
                        self._post(lease)
                backoff = 0.2
            except Gone:
                version = None
            except Exception as error:  # the API server restarting, a reset connection
                if self._stop.is_set():
                    return
                log.warning("following Lease %s failed (%s); retrying", self.options.name, error)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def _post(self, lease: dict[str, Any] | None) -> None:
        holder = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
        with contextlib.suppress(RuntimeError):  # a closed loop: we are stopping
            self.loop.call_soon_threadsafe(self.seen, holder)
