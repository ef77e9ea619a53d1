"""When the process leads (`Shell.leading`), in one of three ways:

- at once, with no Lease (a single replica, tests);
- while it holds a Lease of its own (`kube.leader.Elector`): the controller, and the extender
  deployed behind a Service. The election runs as a guarded task ("leader election");
- while the kube-scheduler beside it holds the scheduler's Lease (`kube.leader.LeaseFollower`):
  the extender in the scheduler's pod, so that the extender working is the one whose ledger the
  leading scheduler calls, with no second election that could disagree with the scheduler's.

Leadership is never handed back: losing the Lease, or seeing another scheduler take the followed
one after leading, ends the process (GracefulExit on the loop) so that two processes never act at
once; the pod's restart brings it back as a standby with fresh state. `Shell.lease_lost` tells
the command to exit 1 (not when the scheduler beside it released the Lease on its way out).

A Lease the API server will not let it take or read (`kube.leader.LeaseProblem`: no such
namespace, RBAC forbids it, another refusal) is not a standby's wait: it would never lead, and
would say nothing. `describe` turns the problem into one line naming the Lease, what is wrong and
the fix (create the namespace, grant the role, or name another namespace by flag); it is kept in
`Shell.lease_problem`, which /readyz and the extender's refusals to kube-scheduler show, and
logged at ERROR when it appears, again at most every `REMIND_SECONDS` while it lasts
(`ProblemNotice`), and at INFO when it clears. The elector or follower keeps trying meanwhile, so
creating the namespace (or the role) is all it takes: the next attempt takes the Lease.

A standby's readiness may ask that it could take over: each attempt that reads the Lease without
a refusal is kept in `Shell.lease_read`, and `cannot_take_over` says why a process that does not
lead could not take its Lease over: the problem above, or no attempt having read it for a whole
lease duration (the API server unreachable or failing). The controller's readiness is that (its
standby is ready); the standalone extender's is leading, since its Service must reach the leader
only. Who leads is shown by the gauge `lahar_leader{component,lease}` (`leader_gauge`, a
process's series from `show_leading`): 1 while `Shell.leading` is set, read at scrape time, 0 on
a standby.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Literal

from aiohttp import web
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry, Gauge

from extender.kube.leader import (
    Elector,
    FollowOptions,
    LeaseFollower,
    LeaseOptions,
    LeaseProblem,
)
from extender.shell.background import end_process, guarded, nothing
from extender.shell.keys import SHELL, Lifecycle, Shell

log = logging.getLogger(__name__)
Hook = Callable[[web.Application], None]
REMIND_SECONDS = 60.0  # how often a Lease problem that lasts is logged again
GRACE_SECONDS = 10.0  # how long a refusal on credentials or RBAC lasts before it is a problem
Said = Literal["appeared", "lasts", "cleared"]


def describe(problem: LeaseProblem, *, following: bool = False) -> str:
    """The problem in one line: the Lease, what is wrong, and the fix. `following`: the Lease is
    the scheduler's, read (never taken) and named by --follow-scheduler-lease."""
    namespace = problem.namespace
    where = f"{'read' if following else 'take'} Lease {namespace}/{problem.name}"
    flag = "--follow-scheduler-lease NAMESPACE/NAME" if following else "--lease-namespace"
    if problem.status == 404:
        return (
            f"cannot {where}: namespace {namespace} does not exist; create it "
            f"(kubectl create namespace {namespace}) or name an existing one with {flag}"
        )
    if problem.status == 403:
        verbs = "get, list and watch" if following else "get, create and update"
        return (
            f"cannot {where}: forbidden ({problem.reason}); grant this process's "
            f"ServiceAccount {verbs} on leases in namespace {namespace}, or name another "
            f"namespace with {flag}"
        )
    return f"cannot {where}: the API server refused it ({problem.reason})"


@dataclass
class ProblemNotice:
    """When a Lease problem is worth a log line: when it appears (or becomes another), again
    every `remind` seconds at most while it lasts, and when it clears; not on every retry. A
    `patient` problem (a refusal on credentials or RBAC) appears only once it has lasted `grace`
    seconds: a restarting API server refuses such calls for a moment, until its authorizer has
    synced, and that is no problem of the operator's."""

    remind: float = REMIND_SECONDS
    grace: float = GRACE_SECONDS
    said: str | None = None  # the problem last logged, if it has not cleared since
    said_at: float = 0.0
    seen: str | None = None  # the problem of the last attempts, since `seen_at`
    seen_at: float = 0.0

    def heard(self, problem: str | None, now: float, *, patient: bool = False) -> Said | None:
        """The outcome of an attempt (`problem`, or None) at `now`: what to log, if anything."""
        if problem != self.seen:
            self.seen, self.seen_at = problem, now
        if problem is None:
            cleared, self.said = self.said is not None, None
            return "cleared" if cleared else None
        if patient and problem != self.said and now - self.seen_at < self.grace:
            return None  # (not yet: it may pass)
        if problem != self.said:
            self.said, self.said_at = problem, now
            return "appeared"
        if now - self.said_at >= self.remind:
            self.said_at = now
            return "lasts"
        return None


def _noticer(
    shell: Shell, namespace: str, name: str, *, following: bool
) -> Callable[[LeaseProblem | None], None]:
    """What to do with each attempt's outcome, on the loop: keep it in the shell, and log it as
    `ProblemNotice` says."""
    notice = ProblemNotice()

    def noticed(problem: LeaseProblem | None) -> None:
        text = None if problem is None else describe(problem, following=following)
        patient = problem is not None and problem.status in (401, 403)
        said = notice.heard(text, time.monotonic(), patient=patient)
        shell.lease_problem = notice.said  # (a patient problem only once it is said)
        if problem is None:  # (the API server answered about the Lease: it can be read)
            shell.lease_read = time.monotonic()
        match said:
            case "appeared":
                log.error("%s; retrying", shell.lease_problem)
            case "lasts":
                log.error("still %s; retrying", shell.lease_problem)
            case "cleared":
                log.info(
                    "can %s Lease %s/%s now: its namespace exists and the API server allows "
                    "the calls",
                    "read" if following else "take",
                    namespace,
                    name,
                )

    return noticed


def cannot_take_over(shell: Shell, lease: LeaseOptions, now: float) -> str | None:
    """Why a process that does not lead could not take `lease` over at `now` if its holder
    went (None: it could), as words to follow "this process": the API server refuses the Lease
    (`Shell.lease_problem`), or no attempt has read it yet, or none for a whole lease duration, in
    which a leader that went would have lost it to another replica."""
    if shell.lease_problem is not None:
        return shell.lease_problem
    where = f"Lease {lease.namespace}/{lease.name}"
    if shell.lease_read is None:
        return f"has not read {where} yet"
    quiet = now - shell.lease_read
    if quiet > lease.lease_seconds:
        return f"has not read {where} for {quiet:.0f} s: the API server is unreachable or failing"
    return None


def leader_gauge(registry: CollectorRegistry) -> Gauge:
    """`lahar_leader{component,lease}` in `registry`, one definition for every component that
    leads by a Lease; `show_leading` gives a process its series."""
    return Gauge(
        "lahar_leader",
        "1 on the replica that leads (holds its Lease, or its scheduler holds the Lease it "
        "follows), 0 on a standby",
        ["component", "lease"],
        registry=registry,
    )


def show_leading(
    gauge: Gauge, component: str, lease: LeaseOptions | FollowOptions | None, shell: Shell
) -> None:
    """The series of `gauge` (`leader_gauge`) for this process: `component`, and `lease` as
    namespace/name ("" with no Lease: it leads at once); 1 while `shell.leading` is set."""
    name = "" if lease is None else f"{lease.namespace}/{lease.name}"
    gauge.labels(component, name).set_function(lambda: float(shell.leading.is_set()))


def lead(
    app: web.Application,
    api: k8s.ApiClient | None,
    *,
    lease: LeaseOptions | None = None,
    follow: FollowOptions | None = None,
    on_lead: Hook = nothing,
    on_leave: Hook = nothing,
) -> None:
    """Set `app[SHELL].leading` at once with neither `lease` nor `follow`; else while this
    process holds `lease`, or while the scheduler beside it holds `follow`'s Lease (without an API
    client, never: a standby). `on_lead(app)` runs on the loop when it comes to lead (not when it
    leads from the start); `on_leave(app)` when it ceases, just before the process ends."""
    if lease is not None and follow is not None:
        raise ValueError("a process either holds its own Lease or follows its scheduler's")
    if lease is None and follow is None:
        app[SHELL].leading.set()
    elif api is not None and lease is not None:
        app.cleanup_ctx.append(_holding(api, lease, on_lead, on_leave))
    elif api is not None and follow is not None:
        app.cleanup_ctx.append(_following(api, follow, on_lead, on_leave))


def _holding(api: k8s.ApiClient, lease: LeaseOptions, on_lead: Hook, on_leave: Hook) -> Lifecycle:
    async def hold(app: web.Application) -> None:
        shell = app[SHELL]

        def lost() -> None:
            shell.leading.clear()
            try:
                on_leave(app)
            finally:  # (a failing hook must not keep a process that lost its Lease alive)
                shell.lease_lost = True
                end_process(shell)

        noticed = _noticer(shell, lease.namespace, lease.name, following=False)
        Elector(api, lease, shell.leading, lost, noticed).start()
        await shell.leading.wait()
        on_lead(app)

    return guarded(hold, "leader election", returns=True)


def _following(
    api: k8s.ApiClient, follow: FollowOptions, on_lead: Hook, on_leave: Hook
) -> Lifecycle:
    async def context(app: web.Application) -> AsyncIterator[None]:
        shell = app[SHELL]

        def seen(holder: str) -> None:
            shell.lease_read = time.monotonic()
            if follow.ours(holder):
                if not shell.leading.is_set():
                    log.info("leading: the scheduler beside this extender holds the Lease")
                    shell.leading.set()
                    on_lead(app)
            elif shell.leading.is_set():
                shell.leading.clear()
                try:
                    on_leave(app)
                finally:  # (a failing hook must not keep a process that lost its Lease alive)
                    _stop_following(shell, follow, holder)

        noticed = _noticer(shell, follow.namespace, follow.name, following=True)
        follower = LeaseFollower(api, follow, seen, noticed)
        follower.start()
        yield
        follower.stop()

    return context


def _stop_following(shell: Shell, follow: FollowOptions, holder: str) -> None:
    """The followed Lease is no longer the scheduler beside this process's: say so, end."""
    if not holder:  # released: the scheduler beside it ended (a rollout, a drain)
        log.info(
            "the scheduler beside this extender released the Lease %s/%s: stopping",
            follow.namespace,
            follow.name,
        )
    else:
        log.error(
            "the scheduler Lease %s/%s went to %s: stopping",
            follow.namespace,
            follow.name,
            holder,
        )
        shell.lease_lost = True
    end_process(shell)
