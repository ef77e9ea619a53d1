"""A caller's mistake is one WARNING line, never an ERROR: the running extender app (aiohttp test
server, the shipped policy) answers a body over the size limit, one that is not JSON, a field of
the wrong type, a path no verb is served at and a verb called with the wrong method with a 4xx
naming what was wrong, and logs exactly one WARNING line saying so, without a traceback. An
exception nobody expected (a bug in Lahar, here a binder that breaks) is still an ERROR with its
traceback, logged once, and a 500 saying so."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.server.app import make_app
from tests.builders import cluster, make_node, make_pod

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
LIMIT = 1024**2  # aiohttp's client_max_size, which the extender keeps
Send = Callable[[TestClient[Any, Any]], Awaitable[Any]]


def _filter_args(**fields: Any) -> bytes:
    body = {"Pod": make_pod("p").cpu("1").uid("p").build(), "NodeNames": ["n"], **fields}
    return json.dumps(body).encode()


async def _chunks(total: int) -> AsyncIterator[bytes]:
    """A body sent without a Content-Length (chunked): aiohttp stops reading it at the limit."""
    chunk = b" " * 65536
    for _ in range(total // len(chunk)):
        yield chunk


def _serve(binder_error: Exception | None = None) -> Callable[[Send], tuple[int, str]]:
    def run(send: Send) -> tuple[int, str]:
        state = cluster([make_node("n").cpu("8")], [make_pod("p").cpu("1").uid("p").model()])

        async def binder(namespace: str, name: str, uid: str, node: str) -> None:
            if binder_error is not None:
                raise binder_error

        async def main() -> tuple[int, str]:
            policy = load_policy(POLICY, REGISTRY)
            app = make_app(policy, state=state, binder=binder)
            async with TestClient(TestServer(app)) as client:
                response = await send(client)
                return response.status, await response.text()

        return asyncio.run(main())

    return run


def _said(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What Lahar and aiohttp's server said at WARNING and above (the test server's access log
    is at INFO; `lahar serve` runs without one)."""
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    ("send", "status", "answer", "line"),
    [
        pytest.param(
            lambda c: c.post("/filter", data=_filter_args(Padding="x" * LIMIT)),
            413,
            f"Maximum request body size {LIMIT} exceeded",
            "rejected a filter call from 127.0.0.1: /filter: Maximum request body size",
            id="body over the limit",
        ),
        pytest.param(
            lambda c: c.post("/bind", data=_chunks(2 * LIMIT)),
            413,
            f"Maximum request body size {LIMIT} exceeded",
            "rejected a bind call from 127.0.0.1: /bind: Maximum request body size",
            id="chunked body over the limit",
        ),
        pytest.param(
            lambda c: c.post("/prioritize", data=b"{not json"),
            400,
            "/prioritize: invalid ExtenderArgs: body: Invalid JSON",
            "rejected a prioritize call from 127.0.0.1: /prioritize: invalid ExtenderArgs: "
            "body: Invalid JSON",
            id="not JSON",
        ),
        pytest.param(
            lambda c: c.post("/filter", data=_filter_args(NodeNames=3)),
            400,
            "NodeNames: Input should be a valid array",
            "rejected a filter call from 127.0.0.1: /filter: invalid ExtenderArgs: NodeNames",
            id="a field of the wrong type",
        ),
        pytest.param(
            lambda c: c.post(
                "/filter", data=_filter_args(NodeNames=None, Nodes={"items": [{"metadata": 1}]})
            ),
            400,
            "item 0: metadata.name is missing or not a string",
            "rejected a filter call from 127.0.0.1: /filter: invalid ExtenderArgs: Nodes.items",
            id="a node whose metadata is not an object",
        ),
        pytest.param(
            lambda c: c.post("/bind", json={"PodName": "p", "PodNamespace": []}),
            400,
            "PodNamespace: Input should be a valid string",
            "rejected a bind call from 127.0.0.1: /bind: invalid ExtenderBindingArgs",
            id="a binding field of the wrong type",
        ),
        pytest.param(
            lambda c: c.post("/filt", data=_filter_args()),
            404,
            "Not Found",
            "refused POST /filt from 127.0.0.1: no such path (served: ",
            id="no such verb",
        ),
        pytest.param(
            lambda c: c.get("/filter"),
            405,
            "Method Not Allowed",
            "refused GET /filter from 127.0.0.1: the path takes POST only",
            id="a verb called with GET",
        ),
    ],
)
def test_a_callers_mistake_is_one_warning_line_without_a_traceback(
    send: Send, status: int, answer: str, line: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        got = _serve()(send)
    assert got[0] == status and answer in got[1], got
    said = _said(caplog)
    assert [r.levelname for r in said] == ["WARNING"], [r.getMessage() for r in said]
    [warning] = said
    assert warning.getMessage().startswith(line), warning.getMessage()
    assert warning.exc_info is None and "Traceback" not in caplog.text


def test_an_unknown_path_names_the_verbs_that_are_served(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        _serve()(lambda c: c.post("/prioritise", data=b"{}"))
    [warning] = _said(caplog)
    served = warning.getMessage().partition("(served: ")[2].rstrip(")").split(", ")
    assert {"/filter", "/prioritize", "/preempt", "/bind"} <= set(served)


def test_an_unexpected_exception_is_one_error_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bind = {"PodName": "p", "PodNamespace": "default", "PodUID": "p", "Node": "n"}
    with caplog.at_level(logging.INFO):
        status, answer = _serve(RuntimeError("the binder broke"))(
            lambda c: c.post("/bind", json=bind)
        )
    assert status == 500
    assert answer == "Lahar's extender failed on this bind call (RuntimeError); see its log"
    said = _said(caplog)
    assert [(r.name, r.levelname) for r in said] == [("extender.server.routes", "ERROR")]
    [error] = said
    assert error.getMessage() == "bind call failed"
    assert error.exc_info is not None and isinstance(error.exc_info[1], RuntimeError)
