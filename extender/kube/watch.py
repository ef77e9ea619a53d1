"""List and watch any collection, raw: pages of items, then a stream of events as JSON lines.

`list_pages` follows `continue` tokens and returns the raw items with the list's resourceVersion.
`watch_lines` opens a watch from a resourceVersion (with bookmarks, so the version keeps moving on
quiet collections) and yields each event line as bytes; the caller decodes it. A watch that the
server ends because the version is too old raises `Gone`, the signal to list again. The open
response is handed to `on_open`, so another thread can stop a blocked watch with `interrupt`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import RESTResponse

from extender.kube.raw import ApiStatusError, send, status_reason

PAGE = 500
ERROR_PREFIX = b'{"type":"ERROR"'


class Gone(Exception):
    """The requested resourceVersion is too old (HTTP 410): list again."""


def list_pages(
    api: k8s.ApiClient, path: str, selector: str = "", *, fields: str = ""
) -> tuple[list[dict[str, Any]], str]:
    """Every item of the collection at `path` (matching the label `selector` and the field
    selector `fields`, if given) and the resourceVersion of the list."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query: list[tuple[str, str | int]] = [("limit", PAGE)]
        if selector:
            query.append(("labelSelector", selector))
        if fields:
            query.append(("fieldSelector", fields))
        if token:
            query.append(("continue", token))
        try:
            page = json.loads(send(api, "GET", path, query=query).read())
        except ApiStatusError as error:
            if error.status == 410:  # the continue token expired: start the list over
                items, token = [], ""
                continue
            raise
        items.extend(page.get("items") or [])
        metadata = page.get("metadata") or {}
        token = metadata.get("continue") or ""
        if not token:
            return items, str(metadata.get("resourceVersion", ""))


def watch_lines(
    api: k8s.ApiClient,
    path: str,
    resource_version: str,
    *,
    selector: str = "",
    fields: str = "",
    timeout_seconds: int = 300,
    on_open: Callable[[RESTResponse], None] | None = None,
) -> Iterator[bytes]:
    """Event lines of a watch from `resource_version`, until the server ends it."""
    query: list[tuple[str, str | int]] = [
        ("watch", "true"),
        ("resourceVersion", resource_version),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", timeout_seconds),
    ]
    if selector:
        query.append(("labelSelector", selector))
    if fields:
        query.append(("fieldSelector", fields))
    try:
        response = send(api, "GET", path, query=query, timeout=(5.0, timeout_seconds + 30.0))
    except ApiStatusError as error:
        if error.status == 410:
            raise Gone(str(error)) from error
        raise
    if on_open is not None:
        on_open(response)
    pending = bytearray()
    try:
        for chunk in response.response.stream(amt=None, decode_content=True):
            pending += chunk
            if b"\n" not in chunk:
                continue  # a long object arriving in pieces: split once its line is complete
            *lines, rest = pending.split(b"\n")
            pending = bytearray(rest)
            for line in lines:
                if line.startswith(ERROR_PREFIX):
                    _raise_error(line)
                if line:
                    yield bytes(line)
    finally:
        response.response.release_conn()


def interrupt(response: RESTResponse) -> None:
    """Unblock a watch reading `response`, as a network fault would. A response the watch has
    already closed or released needs nothing (urllib3 refuses to shut it down: an interrupt racing
    the watch's own end, seen when the API server restarted)."""
    with contextlib.suppress(ValueError, RuntimeError):
        response.response.shutdown()


def _raise_error(line: bytes | bytearray) -> None:
    status = json.loads(line).get("object") or {}
    code = int(status.get("code") or 0)
    if code == 410:
        raise Gone(str(status.get("message", "resource version too old")))
    raise ApiStatusError(f"watch error: {status_reason(status, code)}", code)
