"""`lahar crds [--write | --check] [--dir DIR] [--chart-dir DIR]`: Lahar's CRDs as its models make
them (`api.crds`): printed, written, or checked against the files (exit 1 naming each file that
differs, with the difference; `make lint` runs it).

The CRDs live in two places, one the copy of the other. `manifests/crds/` is the kustomization the
install applies first: the files the models make, and Coscheduling's PodGroup, written by hand.
The Helm chart's `charts/lahar/crds/` holds the same files, byte for byte, because Helm installs
only what is inside the chart: exactly the files `manifests/crds/kustomization.yaml` lists, and no
other (Helm would install any YAML file left there). `--write` writes the models' files and then
copies every listed file into the chart; `--check` says which file of either folder is not what
it should be. Given `--dir` alone, only that folder is written or checked (the chart only with
`--chart-dir` too).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

import yaml

from extender.api.crds import rendered
from extender.devcluster.paths import manifests_dir, repository

SHOWN_LINES = 40  # of a difference, per file
KUSTOMIZATION = "kustomization.yaml"
CHART_SUFFIXES = (".yaml", ".yml", ".json")  # the files Helm installs from a chart's crds/


def chart_crds_dir() -> Path:
    return repository() / "charts" / "lahar" / "crds"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "crds", help="print, write or check the Volcano CRDs generated from Lahar's models"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--write", action="store_true", help="write them into the manifests and the Helm chart"
    )
    mode.add_argument(
        "--check", action="store_true", help="exit 1 if a file differs from what it should be"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help=f"the folder of the CRD files (default {manifests_dir() / 'crds'})",
    )
    parser.add_argument(
        "--chart-dir",
        type=Path,
        default=None,
        help="the chart's crds/ folder, a copy of the files --dir's kustomization lists "
        f"(default {chart_crds_dir()}, unless --dir is given)",
    )
    parser.set_defaults(run=_crds)


def _crds(args: argparse.Namespace) -> int:
    folder: Path = args.dir or manifests_dir() / "crds"
    chart: Path | None = args.chart_dir or (None if args.dir else chart_crds_dir())
    files = rendered()
    if not args.write and not args.check:
        print("---\n".join(files.values()), end="")
        return 0
    if args.write:
        _write(folder, files, "models")
    stale = 0 if args.write else _stale(folder, files, "the models make", "models")
    if chart is not None:
        wanted = _listed(folder)
        if wanted is None:
            return 2
        if args.write:
            _write(chart, wanted, str(folder))
            _remove_others(chart, wanted)
        else:
            stale += _stale(chart, wanted, f"its copy in {folder}", str(folder))
            stale += _others(chart, wanted)
    if args.check and not stale:
        checked = folder if chart is None else f"{folder} and {chart}"
        print(f"the CRDs in {checked} are what they should be")
    return 1 if stale else 0


def _listed(folder: Path) -> dict[str, str] | None:
    """The text of each file `folder`'s kustomization applies (its resources) by name, or None,
    said, when the kustomization or a file it lists cannot be read."""
    path = folder / KUSTOMIZATION
    try:
        kustomization = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        print(f"{path}: cannot read the CRD files it lists: {error}", file=sys.stderr)
        return None
    resources = kustomization.get("resources") if isinstance(kustomization, dict) else None
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        print(f"{path}: `resources` is not a list of files", file=sys.stderr)
        return None
    try:
        return {name: (folder / name).read_text() for name in resources}
    except OSError as error:
        print(f"{path} lists a file that cannot be read: {error}", file=sys.stderr)
        return None


def _write(folder: Path, files: dict[str, str], source: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = folder / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path} (from {source})")


def _remove_others(chart: Path, wanted: dict[str, str]) -> None:
    for path in _other_files(chart, wanted):
        path.unlink()
        print(f"removed {path}: {path.parent} holds only what the kustomization lists")


def _other_files(chart: Path, wanted: dict[str, str]) -> list[Path]:
    if not chart.is_dir():
        return []
    return sorted(p for p in chart.iterdir() if p.suffix in CHART_SUFFIXES and p.name not in wanted)


def _others(chart: Path, wanted: dict[str, str]) -> int:
    others = _other_files(chart, wanted)
    for path in others:
        print(
            f"{path} is not a CRD the kustomization lists, and Helm would install it: run "
            "`lahar crds --write`",
            file=sys.stderr,
        )
    return len(others)


def _stale(folder: Path, files: dict[str, str], what: str, source: str) -> int:
    stale = 0
    for name, text in files.items():
        path = folder / name
        found = path.read_text() if path.exists() else ""
        if found == text:
            continue
        stale += 1
        print(f"{path} is not what {what}: run `lahar crds --write`", file=sys.stderr)
        diff = list(
            difflib.unified_diff(
                found.splitlines(), text.splitlines(), str(path), source, lineterm=""
            )
        )
        for line in diff[:SHOWN_LINES]:
            print(f"  {line}", file=sys.stderr)
        if len(diff) > SHOWN_LINES:
            print(f"  ... and {len(diff) - SHOWN_LINES} more lines", file=sys.stderr)
    return stale
