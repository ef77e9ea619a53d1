"""Stopping a watch: `interrupt` on a response the watch already closed or released is a no-op
(it raced the watch's own end when the API server restarted, and failed the informer's stop)."""

from __future__ import annotations

import io

from kubernetes.client.rest import RESTResponse
from urllib3 import HTTPResponse

from extender.kube.watch import interrupt


def test_interrupting_a_closed_watch_response_does_nothing() -> None:
    raw = HTTPResponse(body=io.BytesIO(b'{"type":"ADDED"}\n'), preload_content=False)
    raw.close()  # the watch ended and closed it before the stop came
    interrupt(RESTResponse(raw))
    assert raw.closed
