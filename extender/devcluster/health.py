"""Readiness probes for the processes a dev cluster starts.

Each probe polls a component's own health endpoint and, between polls, checks that the process is
still alive: a component that exits during start fails the wait at once with its log's last line,
instead of after the timeout. These are process health checks, not API use (that is `kube`'s job).
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path

from extender.devcluster.child_processes import ProcessRecord, is_running, last_log_line
from extender.devcluster.errors import DevClusterError
from extender.kube import wait_until


def _context(ca: Path | None) -> ssl.SSLContext:
    if ca is not None:
        return ssl.create_default_context(cafile=str(ca))
    # kube-scheduler and kube-controller-manager serve with certificates they sign themselves.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def wait_healthy(
    record: ProcessRecord,
    url: str,
    *,
    timeout: float,
    ca: Path | None = None,
    token: str | None = None,
) -> None:
    """Wait until GET `url` answers 200, failing fast if the process dies."""
    context = _context(ca) if url.startswith("https") else None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    last = ["no answer yet"]

    def healthy() -> bool:
        if not is_running(record):
            raise DevClusterError(
                f"{record.name} exited during start: {last_log_line(record.log)} "
                f"(log: {record.log})"
            )
        request = urllib.request.Request(url, headers=headers)  # noqa: S310 (loopback URL we built)
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as answer:  # noqa: S310
                return bool(answer.status == 200)
        except urllib.error.HTTPError as exc:
            last[0] = f"HTTP {exc.code}"
        except (OSError, urllib.error.URLError) as exc:
            last[0] = str(getattr(exc, "reason", exc))
        return False

    try:
        wait_until(healthy, timeout=timeout, what=f"{record.name} at {url}")
    except TimeoutError as exc:
        raise DevClusterError(
            f"{record.name} did not become healthy within {timeout:g}s ({last[0]}); "
            f"see its log {record.log}"
        ) from exc
