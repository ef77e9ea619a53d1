"""Leader election over a coordination.k8s.io Lease, with the Kubernetes client's own elector.

The elector blocks, so it runs in a daemon thread; `leading` (an asyncio.Event) is set on the event
loop once this process holds the Lease. Losing the Lease (a renewal not done within the renew
deadline: the API server unreachable, the process stalled) calls `on_lost` on the loop: the
controller and the extender then stop, as client-go's controllers do, so two leaders never act at
once. A standby takes over at most `lease_seconds` after the leader stopped renewing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client as k8s
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

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
