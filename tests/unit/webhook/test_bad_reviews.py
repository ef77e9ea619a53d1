"""What is not a review the webhook can read is the caller's mistake: the running webhook app
(aiohttp test server; an API server it cannot reach, which the reviews do not need) answers a body
over `MAX_BODY` (declared or not), one that is not JSON, an envelope field of the wrong type and a
path no rule is served at with a 4xx naming what was wrong, and logs exactly one WARNING line
saying so, without a traceback. A rule that raises (a bug) is one ERROR line with its traceback,
and a denial saying so."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from kubernetes import client as k8s

from extender.admission.admit import RULES, Outcome, Settings
from extender.api.admission import AdmissionRequest
from extender.api.log_fields import SUBJECT
from extender.devcluster.ports import free_ports
from extender.pki import CertOptions
from extender.webhook.app import MAX_BODY, make_app
from extender.webhook.store import WebhookStore
from extender.webhook.tls import ServingCertificate, TlsOptions
from tests.builders import make_queue

Send = Callable[[TestClient[Any, Any]], Awaitable[Any]]
WEBHOOK_LOGGER = "extender.webhook.app"


@pytest.fixture
def unreachable() -> Iterator[k8s.ApiClient]:
    """A client of an API server that is not there (a port nothing listens on)."""
    (port,) = free_ports(1)
    client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{port}"))
    yield client
    client.close()


def _review(**request: Any) -> bytes:
    queue = make_queue("research").build()
    fields = {
        "uid": "0f6f8d1e",
        "kind": {"group": "scheduling.volcano.sh", "version": "v1beta1", "kind": "Queue"},
        "resource": {"group": "scheduling.volcano.sh", "version": "v1beta1", "resource": "queues"},
        "name": "research",
        "operation": "CREATE",
        "object": queue,
        **request,
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": fields}
    return json.dumps(body).encode()


async def _chunks(total: int) -> AsyncIterator[bytes]:
    """A body sent without a Content-Length (chunked): aiohttp stops reading it at the limit."""
    chunk = b" " * 65536
    for _ in range(total // len(chunk)):
        yield chunk


def _serve(api: k8s.ApiClient, send: Send) -> tuple[int, str]:
    configurations = (("ValidatingWebhookConfiguration", "lahar-webhook"),)
    options = TlsOptions(CertOptions(hosts=("lahar-webhook",)), configurations=configurations)
    tls = ServingCertificate(api, options)

    async def main() -> tuple[int, str]:
        app = make_app(api, tls, Settings("lahar", frozenset({"lahar"})))
        async with TestClient(TestServer(app)) as client:
            response = await send(client)
            return response.status, await response.text()

    try:
        return asyncio.run(main())
    finally:
        tls.close()


def _said(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The webhook's lines refusing a request, and any ERROR at all (the informers and the
    certificate keeper, out of reach of their API server, say so at WARNING meanwhile: lines
    not about the request)."""
    return [
        r
        for r in caplog.records
        if r.levelno >= logging.ERROR
        or (
            r.levelno >= logging.WARNING
            and r.name == WEBHOOK_LOGGER
            and r.msg.startswith("refused")
        )
    ]


@pytest.mark.parametrize(
    ("send", "status", "line"),
    [
        pytest.param(
            lambda c: c.post("/validate/queues", data=b"{" + b" " * MAX_BODY + b"}"),
            413,
            f"refused a review of queues from 127.0.0.1: the body is over {MAX_BODY} bytes",
            id="body declared over the limit",
        ),
        pytest.param(
            lambda c: c.post("/validate/queues", data=_chunks(MAX_BODY + 65536)),
            413,
            f"refused a review of queues from 127.0.0.1: the body is over {MAX_BODY} bytes",
            id="chunked body over the limit",
        ),
        pytest.param(
            lambda c: c.post("/mutate/queues", data=b"\xff\xfe not json"),
            400,
            "refused a review of queues from 127.0.0.1: not an AdmissionReview v1: the body is "
            "not JSON",
            id="not JSON",
        ),
        pytest.param(
            lambda c: c.post("/validate/queues", data=_review(operation=3)),
            400,
            "refused a review of queues from 127.0.0.1: not an AdmissionReview v1: "
            "request.operation:",
            id="an envelope field of the wrong type",
        ),
        pytest.param(
            lambda c: c.post("/validate/queue", data=_review()),
            404,
            "refused POST /validate/queue from 127.0.0.1: no such path (served: ",
            id="no such path",
        ),
    ],
)
def test_a_callers_mistake_is_one_warning_line_without_a_traceback(
    unreachable: k8s.ApiClient,
    send: Send,
    status: int,
    line: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        got, answer = _serve(unreachable, send)
    assert got == status, answer
    said = _said(caplog)
    assert [r.levelname for r in said] == ["WARNING"], [r.getMessage() for r in said]
    [warning] = said
    assert warning.getMessage().startswith(line), warning.getMessage()
    assert warning.exc_info is None


def test_a_review_it_can_read_logs_no_warning(
    unreachable: k8s.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        status, answer = _serve(unreachable, lambda c: c.post("/validate/queues", data=_review()))
    assert status == 200 and json.loads(answer)["response"]["allowed"], answer
    assert _said(caplog) == []


def test_a_rule_that_raises_is_one_error_with_its_traceback(
    unreachable: k8s.ApiClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    resource, _ = RULES["/validate/queues"]

    def broken(request: AdmissionRequest, store: WebhookStore, options: Settings) -> Outcome:
        raise KeyError("spec")  # what a bug in a rule looks like

    monkeypatch.setitem(RULES, "/validate/queues", (resource, broken))
    with caplog.at_level(logging.INFO):
        status, answer = _serve(unreachable, lambda c: c.post("/validate/queues", data=_review()))
    response = json.loads(answer)["response"]
    assert status == 200 and not response["allowed"]
    assert (
        "Lahar's webhook failed on this queues request (KeyError)" in response["status"]["message"]
    )
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.getMessage()) for r in errors] == [
        (WEBHOOK_LOGGER, "admission of queues research failed")
    ]
    assert errors[0].exc_info is not None and isinstance(errors[0].exc_info[1], KeyError)
    assert getattr(errors[0], SUBJECT) == {
        "kind": "Queue",
        "name": "research",
        "queue": "research",
    }
