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

log = logging.getLogger(__name__)
W = TypeVar("W", bound=BaseModel)
JSON = "application/json"


class BadRequest(Exception):
    pass


async def _parse(request: web.Request, model: type[W]) -> W:
    body = await request.read()
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        raise BadRequest(f"{request.path}: invalid {model.__name__}: {explain(error)}") from error


def _verb(
    name: str, handle: Callable[[web.Request], Awaitable[bytes]]
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        metrics = request.app[METRICS]
        started = time.perf_counter()
        try:
            body = await handle(request)
        except BadRequest as error:
            log.warning("rejected a %s call: %s", name, error)
            metrics.requests.labels(name, "bad_request").inc()
            return web.Response(status=400, text=str(error))
        metrics.requests.labels(name, "ok").inc()
        metrics.latency.labels(name).observe(time.perf_counter() - started)
        return web.Response(body=body, content_type=JSON)

    return handler


async def _parse_args(request: web.Request) -> tuple[ExtenderArgs, Candidates]:
    body = await request.read()
    try:
        return request.app[PARSER].parse(body)
    except ValidationError as error:
        raise BadRequest(f"{request.path}: invalid ExtenderArgs: {explain(error)}") from error


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
    app.router.add_post("/filter", _verb("filter", _filter))
    app.router.add_post("/prioritize", _verb("prioritize", _prioritize))
    app.router.add_post("/preempt", _verb("preempt", _preempt))
    app.router.add_post("/bind", _verb("bind", _bind))
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
