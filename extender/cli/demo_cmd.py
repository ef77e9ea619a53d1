"""`lahar demo [--keep]`: what `make demo` runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from extender.demo import DemoOptions, run_demo
from extender.devcluster.paths import default_state_dir


def register(commands: Any) -> None:
    parser = commands.add_parser("demo", help="run Lahar's demo on a local dev cluster")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help=f"where the demo cluster keeps its state (default {default_state_dir()}-demo)",
    )
    parser.set_defaults(run=_demo)


def _demo(args: argparse.Namespace) -> int:
    state_dir = Path(args.state_dir or f"{default_state_dir()}-demo").resolve()
    return run_demo(DemoOptions(state_dir=state_dir, keep=args.keep))
