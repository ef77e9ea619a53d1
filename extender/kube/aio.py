"""Requests to the API server on the event loop: aiohttp, signed as the kubernetes client signs.

The extender's writes on the hot path (a binding per pod, a gate lifted per gang member) go out
from the event loop on kept-alive connections instead of a worker thread each: no thread hand-off
per call, no thread pool to size, and as many in flight as the connection limit allows. Requests
carry the client configuration's credentials (its bearer token, read again when the client
refreshes it: a ServiceAccount's rotating token; or its client certificate) and trust its CA.
A failed call raises `ApiStatusError` (with the HTTP status) or `KubeError`, as `raw.send` does.
"""

from __future__ import annotations

import json
import ssl
import time
from typing import Any

import aiohttp
from kubernetes import client as k8s

from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError, status_reason

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
TOKEN_FRESH = 60.0  # seconds a bearer token read from the configuration is used


class AsyncApi:
    def __init__(
        self, configuration: k8s.Configuration, *, connections: int = 32, timeout: float = 20.0
    ) -> None:
        self._configuration = configuration
        self._connections = connections
        self._timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=5.0)
        self._session: aiohttp.ClientSession | None = None
        self._base = str(configuration.host).rstrip("/")
        self._token_value: str | None = None
        self._token_read_at: float | None = None

    def _ssl(self) -> ssl.SSLContext | bool:
        config = self._configuration
        if not self._base.startswith("https"):
            return False
        context = ssl.create_default_context(cafile=config.ssl_ca_cert or None)
        if not config.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if config.cert_file:
            context.load_cert_chain(config.cert_file, config.key_file)
        return context

    def _open(self) -> aiohttp.ClientSession:
        """The session, made on first use (on the running loop)."""
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._connections, ssl=self._ssl(), keepalive_timeout=60
            )
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, json_serialize=json.dumps
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Accept": JSON, "Content-Type": content_type}
        token = self._token()
        if token:
            headers["Authorization"] = token
        return headers

    def _token(self) -> str | None:
        """The bearer token, asked of the configuration again once a minute (its refresh hook
        reads a ServiceAccount's rotating token file; a request must not pay for that each)."""
        now = time.monotonic()
        if self._token_read_at is None or now - self._token_read_at > TOKEN_FRESH:
            config = self._configuration
            self._token_value = config.get_api_key_with_prefix("BearerToken", alias="authorization")
            self._token_read_at = now
        return self._token_value

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = JSON,
    ) -> bytes:
        """The response body of one request; an error status raises `ApiStatusError`."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        session = self._open()
        try:
            async with session.request(
                method, self._base + path, data=data, headers=self._headers(content_type)
            ) as response:
                payload = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as error:
            raise KubeError(f"{method} {path}: {error or type(error).__name__}") from error
        if not 200 <= status <= 299:
            raise ApiStatusError(f"{method} {path}: {status_reason(payload, status)}", status)
        return payload
