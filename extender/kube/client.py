"""API clients built from a kubeconfig file, and the error type of this layer.

A client is built per kubeconfig file, never from the process-global default configuration, so one
process can talk to several clusters (the test suite, the demo and later the extender all do).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

# What a call raises when it never got an answer from the API server (restarting, a cut
# connection): the caller's retry, not a refusal to report.
UNREACHABLE = (urllib3.exceptions.HTTPError, OSError)
# The narrow form, where telling the cluster's fault from Lahar's matters (a handler's failure
# logged as a WARNING or as an ERROR with its traceback): only what the client raises when no
# answer came. urllib3's retries exhausted (`MaxRetryError`), a connection broken mid-answer
# (`ProtocolError`), a read timed out (`urllib3.exceptions.TimeoutError`), and the socket's own
# `ConnectionError` and `TimeoutError`; not every `OSError`, since a file Lahar cannot open
# (`FileNotFoundError`, `PermissionError`) is Lahar's own fault.
OUT_OF_REACH: tuple[type[Exception], ...] = (
    urllib3.exceptions.MaxRetryError,
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.TimeoutError,
    ConnectionError,
    TimeoutError,
)


class KubeError(Exception):
    """An API call failed; the message names the object and the reason the server gave."""


@contextmanager
def connect(kubeconfig: Kubeconfig, context: str | None = None) -> Iterator[k8s.ApiClient]:
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


Kubeconfig = Path | tuple[Path, ...]
"""One kubeconfig file, or the files of $KUBECONFIG merged as kubectl merges them: missing files
are skipped, and the first file to name a cluster, user or context, or to set current-context,
wins."""


def _merged(kubeconfig: Kubeconfig, context: str | None) -> tuple[str, str | None, str]:
    """The client's `config_file` (the files that exist, joined as $KUBECONFIG joins them), the
    context to use (kubectl's current one, the first file's to set one, unless `context`), and
    the files' names for messages."""
    files = (kubeconfig,) if isinstance(kubeconfig, Path) else kubeconfig
    named = ", ".join(str(f) for f in files) or "(none)"
    existing = [f for f in files if f.is_file()]
    if not existing:
        raise KubeError(f"kubeconfig {named} does not exist; pass --kubeconfig FILE")
    if context is None and len(existing) > 1:  # (the client's merge lets the last file win)
        context = next(filter(None, (_current_context(f) for f in existing)), None)
    return os.pathsep.join(str(f) for f in existing), context, named


def _current_context(path: Path) -> str | None:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise KubeError(f"kubeconfig {path} is not usable: {exc}") from exc
    current = document.get("current-context") if isinstance(document, dict) else None
    return str(current) if current else None


def load_client(kubeconfig: Kubeconfig, context: str | None = None) -> k8s.ApiClient:
    """Return an ApiClient for `context` of `kubeconfig` (default: its current context)."""
    config_file, context, named = _merged(kubeconfig, context)
    try:
        api: k8s.ApiClient = k8s_config.new_client_from_config(
            config_file=config_file, context=context
        )
    except k8s_config.ConfigException as exc:
        raise KubeError(f"kubeconfig {named} is not usable: {exc}") from exc
    return api


def context_namespace(kubeconfig: Kubeconfig, context: str | None = None) -> str:
    """The namespace `context` of `kubeconfig` names (kubectl's default namespace), else
    `default`."""
    config_file, wanted, named = _merged(kubeconfig, context)
    try:
        contexts, current = k8s_config.list_kube_config_contexts(config_file=config_file)
    except k8s_config.ConfigException as exc:
        raise KubeError(f"kubeconfig {named} is not usable: {exc}") from exc
    chosen = next((c for c in contexts if c.get("name") == wanted), None) if wanted else current
    if context and chosen is None:
        raise KubeError(f"kubeconfig {named} has no context {context!r}")
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


def _status(body: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    """A Kubernetes Status, raw JSON or already parsed ({} when it is not one)."""
    if not isinstance(body, dict):
        try:
            body = json.loads(body or b"")
        except ValueError:
            return {}
    return body if isinstance(body, dict) else {}


def status_message(body: str | bytes | dict[str, Any] | None) -> str | None:
    """The `message` of a Kubernetes Status (raw JSON or already parsed), if it has one."""
    message = _status(body).get("message")
    return str(message) if message else None


def status_fields(body: str | bytes | dict[str, Any] | None) -> tuple[str, ...]:
    """The fields a Kubernetes Status names in `details.causes` (a body validation refused)."""
    details = _status(body).get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    return tuple(
        str(cause["field"])
        for cause in (causes if isinstance(causes, list) else [])
        if isinstance(cause, dict) and cause.get("field")
    )
