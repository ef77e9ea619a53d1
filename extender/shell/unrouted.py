"""One WARNING line for a request that no route of the app answers.

aiohttp answers a path it has no route for with 404, and a route called with a method it does not
take with 405, and says nothing (Lahar's processes run without an access log). Either is the
caller's mistake, most often a configuration naming a verb or a webhook path Lahar does not serve
(kube-scheduler's `extenders[].filterVerb`, a webhook's `clientConfig.service.path`): so the app
logs it once, at WARNING, with the method, the path, the caller and what is served instead. A
404 or 405 a handler raises itself is its own to say.
"""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.typedefs import Handler


def log_unrouted(app: web.Application, log: logging.Logger) -> None:
    """Have `app` log each request no route of it answers to `log`."""

    @web.middleware
    async def unrouted(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPMethodNotAllowed as error:
            if request.match_info.http_exception is error:
                allowed = ", ".join(sorted(error.allowed_methods))
                log.warning(
                    "refused %s %s from %s: the path takes %s only",
                    request.method,
                    request.path,
                    request.remote,
                    allowed,
                )
            raise
        except web.HTTPNotFound as error:
            if request.match_info.http_exception is error:
                served = sorted({r.canonical for r in request.app.router.resources()})
                log.warning(
                    "refused %s %s from %s: no such path (served: %s)",
                    request.method,
                    request.path,
                    request.remote,
                    ", ".join(served),
                )
            raise

    app.middlewares.append(unrouted)
