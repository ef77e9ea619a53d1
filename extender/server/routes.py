"""HTTP handlers: parse the wire body, call the action, write the reply. Nothing else.

A body that is not valid JSON or does not match the verb's type is answered with HTTP 400 and one
line naming the field and the reason (the scheduler logs it); a body over aiohttp's size limit
with 413 and the limit; never a 500 with a stack trace. Each such request is one WARNING line
saying which call, from where, and what was wrong, without a traceback, and counts as a
`bad_request`: most often the caller's mistake (a caller that is not kube-scheduler), though a field
kube-scheduler sends that Lahar's model refuses would be Lahar's bug, which the process cannot tell
apart; so the alert `LaharExtenderBadRequests` fires on their rate and sends the operator to these
lines. A path or a method no verb takes is such a line too, at most one a minute per caller and
path (`shell.unrouted`). Only an exception nobody expected (a bug in Lahar) is an ERROR, with its
traceback, and a 500 saying so.
Filter and bind wait (up to `SYNC_WAIT`) until the cache holds the whole cluster; past that, the
filter fails every node and the bind is refused, saying so, and the scheduler retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from extender.actions.bind import bind
from extender.actions.filter import filter_nodes, refuse_all
from extender.actions.preempt import preempt
from extender.actions.prioritize import prioritize
from extender.api.candidates import Candidates
from extender.api.log_fields import about_pod
from extender.api.scheduling import gang_key
from extender.api.wire import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    describe_invalid,
)
from extender.framework.explain import explain
from extender.server.keys import (
    BARRIER,
    BINDER,
    ENGINE,
    FOLLOWING,
    INFORMERS,
    METRICS,
    PARSER,
    PREEMPTOR,
    SERVING,
    STATE,
    TLS,
)
from extender.server.tls import client_certified
from extender.shell import SHELL
from extender.shell.unrouted import log_unrouted

log = logging.getLogger(__name__)
W = TypeVar("W", bound=BaseModel)
T = TypeVar("T")
JSON = "application/json"
# Seconds a call waits for the cache. The scheduler calls filter from its one scheduling loop, so
# this is short: a listing takes about a second here; past it, the pod is refused and retried.
SYNC_WAIT = 3.0
NO_CLIENT_CERT = "a client certificate signed by the extender's client CA is required\n"


class BadRequest(Exception):
    """A request refused as malformed (a body that is not the verb's wire type, or too large):
    answered with `status` (400, or 413 for the size) and the reason."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


class Unavailable(Exception):
    """This replica cannot answer truly now (a standby, or its cache not synced): HTTP 503 and
    why, so a caller tries the replica that serves instead of trusting an empty ledger."""


async def _read(request: web.Request, what: str, parse: Callable[[bytes], T]) -> T:
    """The request body parsed by `parse`; a validation error is a 400 naming the field, a body
    over the size limit a 413."""
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge as error:
        declared = request.content_length
        size = f" (this one declares {declared} bytes)" if declared is not None else ""
        raise BadRequest(f"{request.path}: {error.text}{size}", status=413) from None
    try:
        return parse(body)
    except ValidationError as error:
        raise BadRequest(f"{request.path}: invalid {what}: {describe_invalid(error)}") from error


async def _parse(request: web.Request, model: type[W]) -> W:
    return await _read(request, model.__name__, model.model_validate_json)


async def _parse_args(request: web.Request) -> tuple[ExtenderArgs, Candidates]:
    return await _read(request, "ExtenderArgs", request.app[PARSER].parse)


def _verb(
    name: str, handle: Callable[[web.Request], Awaitable[bytes]], app: web.Application
) -> Callable[[web.Request], Awaitable[web.Response]]:
    # What does not change between calls is looked up once: the metric children, the mTLS mode.
    metrics = app[METRICS]
    ok, bad, failed, unauthorized, unavailable = (
        metrics.requests.labels(name, r)
        for r in ("ok", "bad_request", "error", "forbidden", "unavailable")
    )
    latency = metrics.latency.labels(name)
    tls = app[TLS]
    certified_only = tls is not None and tls.requires_client

    async def answer(request: web.Request) -> web.Response:
        if certified_only and not client_certified(request):
            log.warning("refused a %s call from %s: no client certificate", name, request.remote)
            unauthorized.inc()
            return web.Response(status=403, text=NO_CLIENT_CERT)
        try:
            body = await handle(request)
        except BadRequest as error:
            log.warning("rejected a %s call from %s: %s", name, request.remote, error)
            bad.inc()
            return web.Response(status=error.status, text=str(error))
        except Unavailable as error:
            log.info("could not answer a %s call: %s", name, error)
            unavailable.inc()
            return web.Response(status=503, text=str(error))
        except Exception as error:  # a bug: said once, with its traceback
            log.exception("%s call failed", name)
            failed.inc()
            why = (
                f"Lahar's extender failed on this {name} call ({type(error).__name__}); see its log"
            )
            return web.Response(status=500, text=why)
        ok.inc()
        return web.Response(body=body, content_type=JSON)

    async def handler(request: web.Request) -> web.Response:
        started = time.perf_counter()
        try:
            return await answer(request)
        finally:  # every result, and a call the scheduler gave up on: it waited that long too
            latency.observe(time.perf_counter() - started)

    return handler


# Filter and prioritize decide within one synchronous step (no await after the body is read), so
# they read the state's live view instead of a copy.
async def _filter(request: web.Request) -> bytes:
    args, candidates = await _parse_args(request)
    waiting = await _unsynced(request.app)
    if waiting is not None:
        return refuse_all(args, candidates, waiting)
    state = request.app[STATE]
    state.learn(args.pod)
    return filter_nodes(request.app[ENGINE], state, args, candidates)


async def _prioritize(request: web.Request) -> bytes:
    args, candidates = await _parse_args(request)
    session = request.app[ENGINE].session(request.app[STATE].view())
    return prioritize(session, args, candidates)


async def _preempt(request: web.Request) -> bytes:
    args = await _parse(request, ExtenderPreemptionArgs)
    subject = about_pod(args.pod.key, gang=gang_key(args.pod))
    if not request.app[SERVING].is_set():  # a standby (or a half cache) evicts nobody
        why = _not_serving(request.app)
        log.info("preempt for pod %s: none (%s)", args.pod.key, why, extra=subject)
        return ExtenderPreemptionResult().dump()
    preemptor = request.app[PREEMPTOR]
    decision = preempt(args, request.app[STATE], request.app[ENGINE])
    log.info("preempt for pod %s: %s", args.pod.key, decision.reason, extra=subject)
    if preemptor is not None and decision.hand_off:
        preemptor.wake()
    if preemptor is not None and decision.proposed is not None:
        preemptor.proposed(decision.proposed)
    return decision.result.dump()


async def _bind(request: web.Request) -> bytes:
    args = await _parse(request, ExtenderBindingArgs)
    waiting = await _unsynced(request.app)
    barrier = request.app[BARRIER]
    if waiting is not None:
        result = ExtenderBindingResult(error=waiting)
    elif barrier is not None:
        result = await barrier.bind(args)
    else:
        result = await bind(request.app[STATE], request.app[BINDER], args)
    request.app[METRICS].binds.labels("refused" if result.error else "bound").inc()
    return result.dump()


async def _unsynced(app: web.Application) -> str | None:
    """None once this replica serves (it leads and its cache is whole; waiting for that a
    while); else why the call cannot proceed."""
    serving = app[SERVING]
    if not serving.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(serving.wait(), SYNC_WAIT)
    return None if serving.is_set() else f"Lahar's {_not_serving(app)}"


def _not_serving(app: web.Application) -> str:
    leading = app[SHELL].leading.is_set()
    problem = app[SHELL].lease_problem
    if not leading and problem is not None:  # no standby: it cannot take (or read) the Lease
        return f"extender is not serving: it {problem}"
    if not leading and app[FOLLOWING]:
        return "extender is a standby: the kube-scheduler beside it does not hold the Lease"
    if not leading:
        return "extender is a standby: another replica holds the Lease"
    informers = app[INFORMERS]
    kinds = [i.kind.name for i in informers.items if not i.synced] if informers else []
    return f"cache is not synced yet (listing {', '.join(kinds) or 'nothing'})"


async def _explain(request: web.Request) -> bytes:
    """`GET /debug/explain?gang=NAMESPACE/PODGROUP`: why the gang is where it is, in plain words
    (`framework.explain`), as JSON: gang, state and lines."""
    key = request.query.get("gang", "")
    namespace, _, name = key.partition("/")
    if not namespace or not name:
        raise BadRequest("query parameter gang: expected NAMESPACE/PODGROUP, e.g. ?gang=ml/tf")
    engine = request.app[ENGINE]
    if not engine.gang_rules:
        raise BadRequest("gang: this extender's policy has no gang plugin")
    if not request.app[SERVING].is_set():  # its ledger is empty or behind: ask the leader
        raise Unavailable(f"Lahar's {_not_serving(request.app)}")
    answer = explain(request.app[STATE], engine, key)
    body = {"gang": answer.gang, "state": answer.state, "lines": list(answer.lines)}
    return json.dumps(body).encode()


def unready(app: web.Application) -> str | None:
    """Why /readyz refuses (None: ready). Ready when it serves; following its scheduler's Lease,
    once its cache is whole (a standby beside a standby scheduler is as ready as its scheduler),
    unless it cannot read that Lease."""
    following = app[FOLLOWING] and app[SHELL].lease_problem is None
    if app[SERVING].is_set() or (following and app[SHELL].synced.is_set()):
        return None
    return _not_serving(app)


def add_routes(app: web.Application) -> None:
    log_unrouted(app, log)
    app.router.add_post("/filter", _verb("filter", _filter, app))
    app.router.add_post("/prioritize", _verb("prioritize", _prioritize, app))
    app.router.add_post("/preempt", _verb("preempt", _preempt, app))
    app.router.add_post("/bind", _verb("bind", _bind, app))
    app.router.add_get("/debug/explain", _verb("explain", _explain, app))
