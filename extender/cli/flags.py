"""Flags the long-running commands share: how to reach the cluster and where to listen."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_server_flags(parser: argparse.ArgumentParser, *, port: int, serves: str) -> None:
    """--kubeconfig, --host and --port (default `port`) for a command serving `serves`."""
    parser.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: the pod's ServiceAccount)"
    )
    parser.add_argument(
        "--host",
        default="0.0.0.0",  # noqa: S104 - the scheduler, probes and Prometheus use the pod network
        help=f"address of {serves} (default 0.0.0.0)",
    )
    parser.add_argument("--port", type=int, default=port, help=f"port of {serves} (default {port})")
