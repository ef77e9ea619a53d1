"""Typed keys of what the app holds (aiohttp `AppKey`s): one place, no stringly-typed lookups.

The same concept one layer down: `shell.keys`, the shell's record that every app of Lahar's keeps
under its one key (`SHELL`).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from extender.actions.barrier import Barrier
from extender.actions.bind import Binder
from extender.api.candidates import CandidateParser
from extender.cache.informer import Informers
from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.server.metrics import ExtenderMetrics
from extender.server.preemptor import Preemptor
from extender.server.status_writer import StatusWriter
from extender.server.tls import ServerTls

STATE = web.AppKey("state", ClusterState)
ENGINE = web.AppKey("engine", Engine)
BINDER: web.AppKey[Binder] = web.AppKey("binder")
METRICS = web.AppKey("metrics", ExtenderMetrics)
INFORMERS: web.AppKey[Informers[ClusterState] | None] = web.AppKey("informers")
PARSER = web.AppKey("candidates", CandidateParser)
BARRIER: web.AppKey[Barrier | None] = web.AppKey("barrier")
STATUS: web.AppKey[StatusWriter | None] = web.AppKey("status")
PREEMPTOR: web.AppKey[Preemptor | None] = web.AppKey("preemptor")
TLS: web.AppKey[ServerTls | None] = web.AppKey("tls")  # None: plain HTTP
# SERVING once this replica leads (`Shell.leading`) with a whole cache (`Shell.synced`) and has
# recovered gangs: verbs, readiness and every writer wait for it, so a standby answers nothing and
# writes nothing.
SERVING = web.AppKey("serving", asyncio.Event)
# Following the scheduler's Lease (the extender beside kube-scheduler in its pod): a standby is
# ready once its cache is whole, as its scheduler is (the pod's readiness is both containers').
FOLLOWING = web.AppKey("following", bool)
