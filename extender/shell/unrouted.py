"""One WARNING line for a request that no route of the app answers, limited per caller and path.

aiohttp answers a path it has no route for with 404, and a route called with a method it does not
take with 405, and says nothing (Lahar's processes run without an access log). Either is the
caller's mistake, most often a configuration naming a verb or a webhook path Lahar does not serve
(kube-scheduler's `extenders[].filterVerb`, a webhook's `clientConfig.service.path`): so the app
logs it, at WARNING, with the method, the path, the caller and what is served instead. A 404 or
405 a handler raises itself is its own to say.

The routing comes before any client-certificate check, so whoever reaches the port can have a line
written: a scanner walking paths, a probe calling a wrong path every second. `Throttle` bounds the
lines: the first refusal of a caller (its address) and path writes one, the others in the next
`WINDOW` seconds are counted, and the next line for that caller and path says how many were not
logged. A caller trying a new path each time is kept in by a second bound, `LINES` lines a `WINDOW`
over all callers and paths, the next line written saying how many it dropped. The pairs live in a
`cachetools.TTLCache` of at most `PAIRS` (the least recent pushed out past that), each forgotten
`REMEMBERED` seconds after its last line, with its count of refusals not logged: the memory is
bounded whatever callers send.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler
from cachetools import TTLCache

WINDOW = 60.0  # seconds: one line per caller and path in it
LINES = 60  # lines in a WINDOW at most, over all callers and paths
PAIRS = 4096  # callers and paths remembered (an address and a path: a few hundred bytes each)
REMEMBERED = 3600.0  # seconds a caller and path is remembered after its last line


@dataclass
class _Pair:
    """A caller and path: when its last line was written, and its refusals since, not logged."""

    logged_at: float
    unlogged: int = 0


@dataclass(frozen=True)
class Admitted:
    """A refusal to write a line for: the refusals of its caller and path not logged since their
    last line (`unlogged`), and those of any caller and path dropped over `LINES` (`dropped`)."""

    unlogged: int = 0
    dropped: int = 0

    def suffix(self, window: float, lines: int) -> str:
        """What the line adds about the refusals not logged ("" when none were)."""
        parts = []
        if self.unlogged:
            parts.append(
                f"{self.unlogged} more from this caller to this path since the last line "
                f"(one line per {window:.0f}s)"
            )
        if self.dropped:
            parts.append(
                f"{self.dropped} more of any caller and path not logged "
                f"(over {lines} lines in {window:.0f}s)"
            )
        return "".join(f"; {part}" for part in parts)


class Throttle:
    """Which refusals get a line (see the module's docstring)."""

    def __init__(
        self,
        *,
        window: float = WINDOW,
        lines: int = LINES,
        pairs: int = PAIRS,
        remembered: float = REMEMBERED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window, self.lines = window, lines
        self._clock = clock
        self._pairs: TTLCache[tuple[str, str], _Pair] = TTLCache(
            maxsize=pairs, ttl=remembered, timer=clock
        )
        self._period: float | None = None  # when the current WINDOW of the LINES bound began
        self._written = 0  # lines written in it
        self._dropped = 0  # refusals not logged over the bound since the last line

    def admit(self, caller: str, path: str) -> Admitted | None:
        """A line to write for a refusal of `path` from `caller` now, or None: counted, silent."""
        now = self._clock()
        key = (caller, path)
        pair = self._pairs.get(key)
        if pair is not None and now - pair.logged_at < self.window:
            pair.unlogged += 1
            return None
        if self._period is None or now - self._period >= self.window:
            self._period, self._written = now, 0
        if self._written >= self.lines:
            self._dropped += 1
            return None
        self._written += 1
        admitted = Admitted(pair.unlogged if pair is not None else 0, self._dropped)
        self._dropped = 0
        self._pairs[key] = _Pair(now)
        return admitted


def log_unrouted(
    app: web.Application, log: logging.Logger, throttle: Throttle | None = None
) -> None:
    """Have `app` log the requests no route of it answers to `log`, as `throttle` lets it."""
    lines = throttle if throttle is not None else Throttle()

    def refused(request: web.Request, why: Callable[[], str]) -> None:
        admitted = lines.admit(str(request.remote), request.path)
        if admitted is not None:
            log.warning(
                "refused %s %s from %s: %s%s",
                request.method,
                request.path,
                request.remote,
                why(),
                admitted.suffix(lines.window, lines.lines),
            )

    def served(request: web.Request) -> str:
        paths = sorted({resource.canonical for resource in request.app.router.resources()})
        return f"no such path (served: {', '.join(paths)})"

    @web.middleware
    async def unrouted(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPMethodNotAllowed as error:
            if request.match_info.http_exception is error:
                allowed = ", ".join(sorted(error.allowed_methods))
                refused(request, lambda: f"the path takes {allowed} only")
            raise
        except web.HTTPNotFound as error:
            if request.match_info.http_exception is error:
                refused(request, lambda: served(request))
            raise

    app.middlewares.append(unrouted)
