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
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

from aiohttp import web
from kubernetes import client as k8s

from extender.kube.leader import Elector, FollowOptions, LeaseFollower, LeaseOptions
from extender.shell.background import end_process, guarded, nothing
from extender.shell.keys import SHELL, Lifecycle, Shell

log = logging.getLogger(__name__)
Hook = Callable[[web.Application], None]


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

        Elector(api, lease, shell.leading, lost).start()
        await shell.leading.wait()
        on_lead(app)

    return guarded(hold, "leader election", returns=True)


def _following(
    api: k8s.ApiClient, follow: FollowOptions, on_lead: Hook, on_leave: Hook
) -> Lifecycle:
    async def context(app: web.Application) -> AsyncIterator[None]:
        shell = app[SHELL]

        def seen(holder: str) -> None:
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

        follower = LeaseFollower(api, follow, seen)
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
