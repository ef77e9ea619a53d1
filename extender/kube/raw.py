"""Raw API requests: JSON bytes in and out, no generated model objects.

The generated client builds a model object for every field of every watched object; the cache needs
a handful of fields, decoded once by pydantic straight from the bytes. These helpers sign requests
with the client's own configuration (token or client certificate, CA) and leave decoding to the
caller. A failed call raises `KubeError` with the server's reason and HTTP status.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import RESTResponse

from extender.kube.client import KubeError, status_fields, status_message

JSON = {"Accept": "application/json", "Content-Type": "application/json"}
Timeout = float | tuple[float, float]


class ApiStatusError(KubeError):
    """The server answered with an error status; `status` is the HTTP code (410 Gone, 409, ...),
    `fields` the fields its Status names as causes (a body the API server's validation refused)."""

    def __init__(self, message: str, status: int, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.fields = fields


def send(
    api: k8s.ApiClient,
    method: str,
    path: str,
    *,
    query: Iterable[tuple[str, str | int]] = (),
    body: Any = None,
    timeout: Timeout = (5.0, 30.0),
    content_type: str = "application/json",
) -> RESTResponse:
    """Send one request; return the response with its body not yet read (it may be a stream)."""
    verb, url, headers, payload, _ = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=list(query),
        header_params={**JSON, "Content-Type": content_type},
        body=body,
        auth_settings=["BearerToken"],
    )
    response: RESTResponse = api.call_api(
        verb, url, header_params=headers, body=payload, _request_timeout=timeout
    )
    if not 200 <= response.status <= 299:
        payload = response.read()
        raise ApiStatusError(
            f"{method} {path}: {status_reason(payload, response.status)}",
            response.status,
            status_fields(payload),
        )
    return response


def status_reason(body: bytes | dict[str, Any] | None, status: int) -> str:
    """The message of a Kubernetes Status (raw or parsed), with the HTTP status."""
    message = status_message(body)
    return f"{message} (HTTP {status})" if message else f"HTTP {status}"
