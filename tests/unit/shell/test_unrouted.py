"""A request no route answers (404, 405) is a WARNING line, limited: one per caller and path a
minute, the next saying how many were not logged between; at most so many lines a minute over all
callers and paths, the next saying how many were dropped; callers and paths remembered in bounded
memory. Checked on the throttle with a clock the test moves, and on an aiohttp app."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from extender.shell.unrouted import Admitted, Throttle, log_unrouted

LOGGER = "extender.test.unrouted"


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


# (seconds, caller, path) of each refusal, and what the throttle says of it: None (counted, no
# line) or the line's (refusals of its caller and path not logged, others dropped over the bound)
Refusal = tuple[float, str, str]
Said = tuple[int, int] | None


@pytest.mark.parametrize(
    ("throttle", "refusals", "said"),
    [
        pytest.param(
            Throttle,
            [
                (0, "a", "/x"),
                (1, "a", "/x"),
                (30, "a", "/x"),
                (59.9, "a", "/x"),
                (60, "a", "/x"),
                (61, "a", "/x"),
                (500, "a", "/x"),
            ],
            [(0, 0), None, None, None, (3, 0), None, (1, 0)],
            id="one line a minute per caller and path, counting those between",
        ),
        pytest.param(
            Throttle,
            [(0, "a", "/x"), (0, "b", "/x"), (0, "a", "/y"), (1, "a", "/x"), (1, "b", "/y")],
            [(0, 0), (0, 0), (0, 0), None, (0, 0)],
            id="callers and paths each have their own",
        ),
        pytest.param(
            lambda clock: Throttle(clock=clock, lines=3),
            [
                (0, "a", "/1"),
                (0, "a", "/2"),
                (1, "a", "/3"),
                (2, "a", "/4"),
                (3, "b", "/1"),
                (59, "a", "/1"),
                (60, "a", "/5"),
                (60, "a", "/6"),
                (61, "a", "/1"),
            ],
            [(0, 0), (0, 0), (0, 0), None, None, None, (0, 2), (0, 0), (1, 0)],
            id="a caller trying path after path is held to so many lines a minute",
        ),
        pytest.param(
            lambda clock: Throttle(clock=clock, remembered=120.0),
            [(0, "a", "/x"), (1, "a", "/x"), (2, "a", "/x"), (200, "a", "/x")],
            [(0, 0), None, None, (0, 0)],
            id="a caller and path not seen for long is forgotten",
        ),
        pytest.param(
            lambda clock: Throttle(clock=clock, pairs=2),
            [(0, "a", "/1"), (0, "a", "/2"), (0, "a", "/3"), (1, "a", "/1"), (1, "a", "/3")],
            [(0, 0), (0, 0), (0, 0), (0, 0), None],
            id="memory holds so many callers and paths, the least recent pushed out",
        ),
    ],
)
def test_the_throttle_lets_a_line_through_once_a_window(
    throttle: Callable[..., Throttle], refusals: list[Refusal], said: list[Said]
) -> None:
    clock = Clock()
    lines = throttle(clock=clock)
    got: list[Said] = []
    for at, caller, path in refusals:
        clock.now = at
        admitted = lines.admit(caller, path)
        got.append(None if admitted is None else (admitted.unlogged, admitted.dropped))
    assert got == said


@pytest.mark.parametrize(
    ("admitted", "suffix"),
    [
        (Admitted(), ""),
        (
            Admitted(4, 0),
            "; 4 more from this caller to this path since the last line (one line per 60s)",
        ),
        (Admitted(0, 7), "; 7 more of any caller and path not logged (over 60 lines in 60s)"),
        (
            Admitted(1, 2),
            "; 1 more from this caller to this path since the last line (one line per 60s); 2 "
            "more of any caller and path not logged (over 60 lines in 60s)",
        ),
    ],
)
def test_a_line_says_how_many_were_not_logged(admitted: Admitted, suffix: str) -> None:
    assert admitted.suffix(60.0, 60) == suffix


def test_an_app_logs_its_unrouted_requests_once_a_minute_per_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()

    async def verb(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def main() -> list[int]:
        app = web.Application()
        log_unrouted(app, logging.getLogger(LOGGER), Throttle(clock=clock))
        app.router.add_post("/filter", verb)
        statuses = []
        async with TestClient(TestServer(app)) as client:
            for at, method, path in [
                (0, "GET", "/nope"),
                (1, "GET", "/nope"),
                (2, "POST", "/nope"),
                (3, "GET", "/filter"),
                (4, "GET", "/filter"),
                (5, "POST", "/filter"),
                (65, "GET", "/nope"),
            ]:
                clock.now = at
                statuses.append((await client.request(method, path)).status)
        return statuses

    with caplog.at_level(logging.INFO, logger=LOGGER):
        statuses = asyncio.run(main())
    assert statuses == [404, 404, 404, 405, 405, 200, 404]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOGGER]
    assert lines == [
        ("WARNING", "refused GET /nope from 127.0.0.1: no such path (served: /filter)"),
        ("WARNING", "refused GET /filter from 127.0.0.1: the path takes POST only"),
        (
            "WARNING",
            "refused GET /nope from 127.0.0.1: no such path (served: /filter); 2 more from this "
            "caller to this path since the last line (one line per 60s)",
        ),
    ]
