"""API clients built from a kubeconfig file, and the error type of this layer.

A client is built per kubeconfig file, never from the process-global default configuration, so one
process can talk to several clusters (the test suite, the demo and later the extender all do).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config


class KubeError(Exception):
    """An API call failed; the message names the object and the reason the server gave."""


@contextmanager
def connect(kubeconfig: Path, context: str | None = None) -> Iterator[k8s.ApiClient]:
    """An ApiClient for `kubeconfig` (its `context`, default the current one), closed (its
    connection pool released) on exit. A call in the block that cannot reach the server (it
    is down, or the address is wrong), or that the server refuses where the caller looked for
    no refusal (expired credentials: 401), ends the block as a `KubeError` saying so."""
    api = load_client(kubeconfig, context)
    server = api.configuration.host
    try:
        yield api
    except urllib3.exceptions.HTTPError as exc:
        raise KubeError(f"cannot reach the API server at {server}: {_transport(exc)}") from exc
    except k8s.ApiException as exc:
        raise KubeError(f"the API server at {server} refused: {api_reason(exc)}") from exc
    finally:
        api.close()


def _transport(error: urllib3.exceptions.HTTPError) -> str:
    """What went wrong on the way, without urllib3's wrapping (`Max retries exceeded ...
    (Caused by NewConnectionError(HTTPSConnection(...): Failed to ...))`)."""
    cause = error.reason if isinstance(error, urllib3.exceptions.MaxRetryError) else error
    text = str(cause)
    return text.partition("): ")[2] or text


def load_client(kubeconfig: Path, context: str | None = None) -> k8s.ApiClient:
    """Return an ApiClient for `context` of `kubeconfig` (default: its current context)."""
    if not kubeconfig.is_file():
        raise KubeError(f"kubeconfig {kubeconfig} does not exist")
    try:
        api: k8s.ApiClient = k8s_config.new_client_from_config(
            config_file=str(kubeconfig), context=context
        )
    except k8s_config.ConfigException as exc:
        raise KubeError(f"kubeconfig {kubeconfig} is not usable: {exc}") from exc
    return api


def context_namespace(kubeconfig: Path, context: str | None = None) -> str:
    """The namespace `context` of `kubeconfig` names (kubectl's default namespace), else
    `default`."""
    try:
        contexts, current = k8s_config.list_kube_config_contexts(config_file=str(kubeconfig))
    except k8s_config.ConfigException as exc:
        raise KubeError(f"kubeconfig {kubeconfig} is not usable: {exc}") from exc
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
    if context and chosen is None:
        raise KubeError(f"kubeconfig {kubeconfig} has no context {context!r}")
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else "default"


def client_for(kubeconfig: Path | None) -> k8s.ApiClient:
    """A client for `kubeconfig`; without one, for the pod's ServiceAccount (in a cluster)."""
    if kubeconfig is not None:
        return load_client(kubeconfig)
    configuration = k8s.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=configuration)
    except k8s_config.ConfigException as exc:
        raise KubeError(
            f"no --kubeconfig given and not running in a cluster ({exc}); pass --kubeconfig FILE"
        ) from exc
    return k8s.ApiClient(configuration)


def api_reason(exc: k8s.ApiException) -> str:
    """The server's own message for a failed call (the Status body), else the HTTP reason."""
    return status_message(exc.body) or f"HTTP {exc.status} {exc.reason}"


def status_message(body: str | bytes | dict[str, Any] | None) -> str | None:
    """The `message` of a Kubernetes Status (raw JSON or already parsed), if it has one."""
    if not isinstance(body, dict):
        try:
            body = json.loads(body or b"")
        except ValueError:
            return None
    message = body.get("message") if isinstance(body, dict) else None
    return str(message) if message else None
