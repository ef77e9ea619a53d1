"""Loopback ports for the dev cluster: free ones picked by the kernel, requested ones checked."""

from __future__ import annotations

import errno
import socket

from extender.devcluster.errors import DevClusterError


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free on 127.0.0.1 a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def require_free(port: int, what: str, flag: str) -> None:
    """Fail with one line if `port` cannot be bound on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            reason = "is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise DevClusterError(
                f"port {port} for the {what} {reason}; free it or choose another with {flag}"
            ) from exc
