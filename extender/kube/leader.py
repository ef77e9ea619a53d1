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

A Lease that cannot be taken or read is a `LeaseProblem`, a value handed up to the caller, not an
exception: the namespace does not exist (HTTP 404 on creating the Lease), RBAC forbids the calls
(403), or the API server refuses them otherwise. The client's elector only logs such refusals and
tries again every retry period, so `Elector` hands its lock a recording stand-in for the
CoordinationV1Api and, after each attempt, reports its outcome: the refusal the attempt ended on, or
None (it took or renewed the Lease, or another holder keeps it). A 409 is no problem (another
replica wrote first), nor is a 404 on reading a Lease not yet created. `LeaseFollower` reports the
same way: a refused list or watch, or an empty list in a namespace that does not exist (listing
there succeeds, with nothing in it). Both keep retrying: once the namespace or the permission is
there, the next attempt succeeds and reports None.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from extender.kube.client import UNREACHABLE, api_reason
from extender.kube.raw import ApiStatusError, send
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


@dataclass(frozen=True)
class LeaseProblem:
    """Why this process cannot take (or read) a Lease: the API server refused a call on it."""

    namespace: str
    name: str
    status: int  # the HTTP status: 404 (the namespace does not exist), 403 (RBAC forbids it), ...
    reason: str  # the API server's message, e.g. `namespaces "lahar-system" not found`


def _no_problem(problem: LeaseProblem | None) -> None:
    pass


# Refusals that are the operator's to fix (credentials, RBAC, a missing namespace); any other
# (a 5xx, 429: the API server's own passing trouble, as while it restarts) is a failed attempt.
PROBLEMS = frozenset({401, 403, 404})


class _RecordedCalls:
    """The Lease calls the client's LeaseLock makes, passed through to the API, each bounded by
    `timeout` seconds (a call on a silently dropped connection must fail before the renew
    deadline, not hold a Lease it no longer has). The last refusal that is a problem (`PROBLEMS`,
    but not a 404 on reading a Lease not yet created) is kept in `refused`, and whether the API
    server had passing trouble in `passing`, until the elector's next attempt clears them."""

    def __init__(self, api: k8s.CoordinationV1Api, timeout: float) -> None:
        self._api, self._timeout = api, timeout
        self.refused: k8s.ApiException | None = None
        self.passing = False

    def read_namespaced_lease(self, name: str, namespace: str) -> Any:
        try:
            return self._api.read_namespaced_lease(name, namespace, _request_timeout=self._timeout)
        except k8s.ApiException as error:
            if error.status != 404:  # (404: no Lease yet; the elector creates it next)
                self._record(error)
            raise

    def create_namespaced_lease(self, namespace: str, body: Any) -> Any:
        return self._recorded(self._api.create_namespaced_lease, namespace, body)

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any) -> Any:
        return self._recorded(
            self._api.replace_namespaced_lease, name=name, namespace=namespace, body=body
        )

    def _recorded(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs, _request_timeout=self._timeout)
        except k8s.ApiException as error:
            if error.status != 409:  # (409: another replica wrote first)
                self._record(error)
            raise

    def _record(self, error: k8s.ApiException) -> None:
        if error.status in PROBLEMS:
            self.refused = error
        else:
            self.passing = True


class _Election(leaderelection.LeaderElection):
    """The client's elector, reporting each attempt's outcome to `attempted` (in its thread)."""

    def __init__(
        self,
        config: electionconfig.Config,
        calls: _RecordedCalls,
        attempted: Callable[[k8s.ApiException | None], None],
    ) -> None:
        super().__init__(config)
        self._calls, self._attempted = calls, attempted
        self._lease = f"{config.lock.namespace}/{config.lock.name}"
        self._unreachable = False

    def try_acquire_or_renew(self) -> bool:
        """One attempt. A call that never reached the API server (a reset connection, the API
        server restarting) is a failed attempt, retried until the renew deadline as client-go
        does; the client's elector would let it end the election, and the process with it."""
        self._calls.refused, self._calls.passing = None, False
        try:
            took = bool(super().try_acquire_or_renew())
        except UNREACHABLE as error:
            if not self._unreachable:
                log.warning(
                    "Lease %s: the API server did not answer (%s); retrying", self._lease, error
                )
            self._unreachable = True
            return False
        if self._unreachable:
            log.info("Lease %s: the API server answers again", self._lease)
        self._unreachable = False
        if not took and self._calls.passing and self._calls.refused is None:
            return False  # the API server's passing trouble: no news about the Lease
        self._attempted(None if took else self._calls.refused)
        return took


class Elector:
    def __init__(
        self,
        api: k8s.ApiClient,
        options: LeaseOptions,
        leading: asyncio.Event,
        on_lost: Callable[[], None],
        on_problem: Callable[[LeaseProblem | None], None] = _no_problem,
    ) -> None:
        """Call on the event loop: `leading` is set there when this process leads, and
        `on_problem` called there after each attempt to take the Lease while it does not: with
        why the API server refused it, or None (no refusal: it is held by another, or taken)."""
        self.options, self.leading, self.on_lost = options, leading, on_lost
        self.on_problem = on_problem
        self.loop = asyncio.get_running_loop()
        lock = LeaseLock(options.name, options.namespace, options.identity)
        # This client, not the process default; recording what the API server refuses.
        timeout = max(1.0, options.renew_seconds - options.retry_seconds)
        self._calls = _RecordedCalls(k8s.CoordinationV1Api(api), timeout)
        lock.api_instance = cast(k8s.CoordinationV1Api, self._calls)
        self._leads = False
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
        elector = _Election(self._config, self._calls, self._attempted)
        try:
            elector.run()
        except Exception:  # a programming error: the election cannot go on
            log.exception("leader election failed")
        finally:
            if not self._released.is_set():  # it ended without telling us: we may not lead
                self._stopped()

    def _attempted(self, refused: k8s.ApiException | None) -> None:
        """After each attempt (in the elector's thread): its outcome to `on_problem`, while
        this process does not lead (a leader that cannot renew loses the Lease, and says so)."""
        if self._leads:
            return
        problem = None
        if refused is not None:
            problem = LeaseProblem(
                self.options.namespace,
                self.options.name,
                int(refused.status or 0),
                api_reason(refused),
            )
        with contextlib.suppress(RuntimeError):  # a closed loop: already stopping
            self.loop.call_soon_threadsafe(self.on_problem, problem)

    def _started(self) -> None:
        self._leads = True
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
    again. Each list's outcome goes to `trouble` on the loop: a `LeaseProblem` when the API
    server refused the list or watch or the namespace does not exist, else None."""

    def __init__(
        self,
        api: k8s.ApiClient,
        options: FollowOptions,
        seen: Callable[[str], None],
        trouble: Callable[[LeaseProblem | None], None] = _no_problem,
    ):
        """Call on the event loop."""
        self.api, self.options, self.seen, self.trouble = api, options, seen, trouble
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
                    missing = None if items else self._missing_namespace()
                    self._report(missing)
                    if missing is not None:  # nothing to watch yet: list again in a while
                        version = None
                        self._stop.wait(backoff)
                        backoff = min(backoff * 2, 5.0)
                        continue
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
            except ApiStatusError as error:  # refused: RBAC, or the API server's own trouble
                if self._stop.is_set():
                    return
                if error.status not in PROBLEMS:
                    log.warning("following Lease %s: %s; retrying", self.options.name, error)
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
                    continue
                problem = LeaseProblem(
                    self.options.namespace, self.options.name, error.status, str(error)
                )
                self._report(problem)
                version = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
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

    def _missing_namespace(self) -> LeaseProblem | None:
        """A problem when the Lease's namespace does not exist (a list there is empty, not a
        404); None when it does, or when this process may not read namespaces (no telling)."""
        namespace = self.options.namespace
        try:
            send(self.api, "GET", f"/api/v1/namespaces/{namespace}").read()
        except ApiStatusError as error:
            if error.status == 404:
                reason = f'namespaces "{namespace}" not found'
                return LeaseProblem(namespace, self.options.name, 404, reason)
        return None

    def _report(self, problem: LeaseProblem | None) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: we are stopping
            self.loop.call_soon_threadsafe(self.trouble, problem)
