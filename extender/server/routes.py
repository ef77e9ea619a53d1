"""HTTP handlers: parse the wire body, call the action, write the reply. Nothing else.

A body that is not valid JSON or does not match the verb's type is answered with HTTP 400 and one
line naming the field and the reason (the scheduler logs it); never a 500 with a stack trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ValidationError

from extender.actions.bind import bind
from extender.actions.filter import filter_nodes
from extender.actions.preempt import preempt
from extender.actions.prioritize import prioritize
from extender.api.candidates import Candidates
from extender.api.wire import ExtenderArgs, ExtenderBindingArgs, ExtenderPreemptionArgs, explain
from extender.server.keys import BARRIER, BINDER, ENGINE, INFORMERS, METRICS, PARSER, STATE
from extender.server.metrics import Metrics

log = logging.getLogger(__name__)
W = TypeVar("W", bound=BaseModel)
T = TypeVar("T")
JSON = "application/json"


class BadRequest(Exception):
    pass


async def _read(request: web.Request, what: str, parse: Callable[[bytes], T]) -> T:
    """The request body parsed by `parse`; a validation error is a 400 naming the field."""
    body = await request.read()
    try:
        return parse(body)
    except ValidationError as error:
        raise BadRequest(f"{request.path}: invalid {what}: {explain(error)}") from error


async def _parse(request: web.Request, model: type[W]) -> W:
    return await _read(request, model.__name__, model.model_validate_json)


async def _parse_args(request: web.Request) -> tuple[ExtenderArgs, Candidates]:
    return await _read(request, "ExtenderArgs", request.app[PARSER].parse)


def _verb(
    name: str, handle: Callable[[web.Request], Awaitable[bytes]], metrics: Metrics
) -> Callable[[web.Request], Awaitable[web.Response]]:
    # The metric children of this verb, looked up once rather than per call.
    ok, bad, failed = (metrics.requests.labels(name, r) for r in ("ok", "bad_request", "error"))
    latency = metrics.latency.labels(name)

    async def handler(request: web.Request) -> web.Response:
        started = time.perf_counter()
        try:
            body = await handle(request)
        except BadRequest as error:
            log.warning("rejected a %s call: %s", name, error)
            bad.inc()
            return web.Response(status=400, text=str(error))
        except Exception:
            log.exception("%s call failed", name)
            failed.inc()
            raise  # aiohttp answers 500
        ok.inc()
        latency.observe(time.perf_counter() - started)
        return web.Response(body=body, content_type=JSON)

    return handler


# Filter and prioritize decide within one synchronous step (no await after the body is read), so
# they read the state's live view instead of a copy.
async def _filter(request: web.Request) -> bytes:
    args, candidates = await _parse_args(request)
    state = request.app[STATE]
    session = request.app[ENGINE].session(state.view())
    return filter_nodes(session, args, candidates, state)


async def _prioritize(request: web.Request) -> bytes:
    args, candidates = await _parse_args(request)
    session = request.app[ENGINE].session(request.app[STATE].view())
    return prioritize(session, args, candidates)


async def _preempt(request: web.Request) -> bytes:
    return preempt(await _parse(request, ExtenderPreemptionArgs)).dump()


async def _bind(request: web.Request) -> bytes:
    args = await _parse(request, ExtenderBindingArgs)
    barrier = request.app[BARRIER]
    if barrier is not None:
        result = await barrier.bind(args)
    else:
        result = await bind(request.app[STATE], request.app[BINDER], args)
    request.app[METRICS].binds.labels("refused" if result.error else "bound").inc()
    return result.dump()


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _readyz(request: web.Request) -> web.Response:
    informers = request.app[INFORMERS]
    if informers is None or informers.synced:
        return web.Response(text="ok")
    waiting = ", ".join(i.kind.name for i in informers.items if not i.synced)
    return web.Response(status=503, text=f"cache not synced yet: {waiting}")


async def _metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def add_routes(app: web.Application) -> None:
    app.router.add_post("/filter", _verb("filter", _filter, app[METRICS]))
    app.router.add_post("/prioritize", _verb("prioritize", _prioritize, app[METRICS]))
    app.router.add_post("/preempt", _verb("preempt", _preempt, app[METRICS]))
    app.router.add_post("/bind", _verb("bind", _bind, app[METRICS]))
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
