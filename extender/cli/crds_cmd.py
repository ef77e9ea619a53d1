"""`lahar crds [--write | --check] [--dir DIR]`: Lahar's Volcano CRDs as its models make them
(`api.crds`): printed, written into `manifests/crds/`, or checked against the files there (exit 1
naming each file that differs, with the difference; `make lint` runs it).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

from extender.api.crds import rendered
from extender.devcluster.paths import manifests_dir

SHOWN_LINES = 40  # of a difference, per file


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "crds", help="print, write or check the Volcano CRDs generated from Lahar's models"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write them into the manifests")
    mode.add_argument(
        "--check", action="store_true", help="exit 1 if a file differs from what the models make"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help=f"the folder of the CRD files (default {manifests_dir() / 'crds'})",
    )
    parser.set_defaults(run=_crds)


def _crds(args: argparse.Namespace) -> int:
    folder: Path = args.dir or manifests_dir() / "crds"
    files = rendered()
    if args.write:
        for name, text in files.items():
            path = folder / name
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                print(f"wrote {path}")
        return 0
    if args.check:
        return _check(folder, files)
    print("---\n".join(files.values()), end="")
    return 0


def _check(folder: Path, files: dict[str, str]) -> int:
    stale = 0
    for name, text in files.items():
        path = folder / name
        found = path.read_text() if path.exists() else ""
        if found == text:
            continue
        stale += 1
        print(f"{path} is not what the models make: run `lahar crds --write`", file=sys.stderr)
        diff = list(
            difflib.unified_diff(
                found.splitlines(), text.splitlines(), str(path), "models", lineterm=""
            )
        )
        for line in diff[:SHOWN_LINES]:
            print(f"  {line}", file=sys.stderr)
        if len(diff) > SHOWN_LINES:
            print(f"  ... and {len(diff) - SHOWN_LINES} more lines", file=sys.stderr)
    if not stale:
        print(f"the CRDs in {folder} are what the models make")
    return 1 if stale else 0
