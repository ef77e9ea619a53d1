"""What the process shell keeps in an app, under one typed key (`SHELL`), and the shape of the
work it attaches to the app (`Lifecycle`, an aiohttp cleanup context).

One record per app, not a key per field: the probes, the guarded tasks, the informers and the
Lease all read and write the same few facts, and the command reads how the run ended from it.

The same concept one layer up: `server.keys`, the typed keys of what the extender's app holds (the
controller's and the webhook's apps keep theirs in their `app` modules).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CollectorRegistry

# Started when the app starts, up to its `yield`; ended at cleanup (`app.cleanup_ctx`).
Lifecycle = Callable[[web.Application], AsyncIterator[None]]


@dataclass
class Shell:
    """What the probes report and how the run ended."""

    registry: CollectorRegistry  # what /metrics exports
    unready: Callable[[], str | None]  # why /readyz answers 503 now; None: ready
    synced: asyncio.Event = field(default_factory=asyncio.Event)  # every kind listed once
    leading: asyncio.Event = field(default_factory=asyncio.Event)  # this process leads
    failed: list[str] = field(default_factory=list)  # background tasks that failed
    lease_lost: bool = False  # the Lease this process led by was lost (or never won)
    # Why this process cannot take (or read) its Lease, and what fixes it; None: no such problem
    # (it leads, stands by while another holds the Lease, or has no Lease).
    lease_problem: str | None = None
    # When (time.monotonic()) an attempt last read the Lease without a refusal: it took or
    # renewed it, or saw another holder; None: none has yet. A standby's readiness asks that this
    # be recent (`lease.cannot_take_over`).
    lease_read: float | None = None
    stopping: bool = False  # the app is shutting down: nothing more may end the process


SHELL = web.AppKey("shell", Shell)
