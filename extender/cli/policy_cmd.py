"""`lahar policy import FILE [-o OUT] [--check]`: Lahar's policy made from Volcano's scheduler
configuration (`plugins.volcano_conf`).

FILE is `volcano-scheduler.conf`, or a ConfigMap holding it under that data key (in a stream of
several documents, the one ConfigMap that does), `-` for stdin. The policy is validated as
`lahar serve` would load it, then printed as YAML under a header naming FILE, or written to OUT;
the notes on what became of each Volcano action, plugin, argument and switch go to stderr, one a
line, grouped by kind (mapped, always, kube-scheduler, differs). `--check` writes nothing: with
OUT it exits 1 when OUT is not what FILE imports to (for CI, so a committed policy stays in step
with the configuration), without it it only validates (exit 1 for a configuration that does not
import). Errors are one line, `lahar policy import: FILE: <path>: <why>`, exit code 2.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

import yaml

from extender.framework.policy import PolicyError, build_policy
from extender.plugins import REGISTRY
from extender.plugins.volcano_conf import (
    CONFIGMAP_KEY,
    Imported,
    Note,
    NoteKind,
    VolcanoConfError,
    import_conf,
)

PREFIX = "lahar policy import"
STDIN = "-"
SHOWN_LINES = 40  # of a difference


class _Unusable(Exception):
    """FILE cannot be turned into a policy; the message says where and why."""

    def __init__(self, message: str, *, unreadable: bool = False) -> None:
        super().__init__(message)
        self.unreadable = unreadable


def register(commands: Any) -> None:
    parser = commands.add_parser("policy", help="Lahar's policy: import Volcano's configuration")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    importing = verbs.add_parser(
        "import",
        help="make Lahar's policy from Volcano's scheduler configuration (or its ConfigMap)",
        description="Read Volcano's volcano-scheduler.conf (or the ConfigMap holding it) and "
        "print the equivalent Lahar policy; notes on stderr say what became of each action, "
        "plugin, argument and switch.",
    )
    importing.add_argument(
        "file",
        metavar="FILE",
        help=f"the configuration, or a ConfigMap with {CONFIGMAP_KEY}; - for stdin",
    )
    importing.add_argument(
        "-o", "--output", dest="out", type=Path, metavar="OUT", help="write the policy to OUT"
    )
    importing.add_argument(
        "--check",
        action="store_true",
        help="write nothing: with -o, exit 1 if OUT differs from what FILE imports to; "
        "without, only validate",
    )
    importing.set_defaults(run=_import)


def _import(args: argparse.Namespace) -> int:
    source = "stdin" if args.file == STDIN else args.file
    try:
        imported = _read(args.file)
    except _Unusable as error:
        print(f"{PREFIX}: {source}: {error}", file=sys.stderr)
        return 1 if args.check and args.out is None and not error.unreadable else 2
    text = rendered(imported, source)
    if args.check and args.out is not None:
        return _check(args.out, text, source, f"{PREFIX} {args.file} -o {args.out}")
    _print_notes(imported.notes)
    if args.check:
        print(f"{source}: imports to a valid Lahar policy")
    elif args.out is not None:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"{PREFIX}: {args.out}: cannot write it: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


def _read(file: str) -> Imported:
    """The policy FILE imports to, validated; `_Unusable` saying why when there is none."""
    try:
        text = sys.stdin.read() if file == STDIN else Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise _Unusable(f"cannot read it: {exc.strerror}", unreadable=True) from exc
    except UnicodeDecodeError as exc:
        raise _Unusable(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise _Unusable(f"not valid YAML: {_one_line(exc)}") from exc
    try:
        imported = import_conf(_the_configuration(documents))
    except VolcanoConfError as exc:
        raise _Unusable(str(exc)) from exc
    try:
        build_policy(imported.document, REGISTRY, source="the policy made")
    except PolicyError as exc:
        raise _Unusable(f"{exc} (please report it: the import should not make this)") from exc
    return imported


def _one_line(error: yaml.YAMLError) -> str:
    """A YAML error's problem and where it is, on one line."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or " ".join(str(error).split())
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def _the_configuration(documents: list[object]) -> object:
    """The one document to import: the only one, else the one ConfigMap holding the
    configuration."""
    if len(documents) == 1:
        return documents[0]
    if not documents:
        raise _Unusable("(top level): empty: no configuration in it")
    carrying = [
        d
        for d in documents
        if isinstance(d, dict)
        and d.get("kind") == "ConfigMap"
        and isinstance(d.get("data"), dict)
        and CONFIGMAP_KEY in d["data"]
    ]
    if len(carrying) != 1:
        found = "none" if not carrying else f"{len(carrying)}"
        raise _Unusable(
            f"(top level): {len(documents)} documents, and {found} of them a ConfigMap with "
            f"{CONFIGMAP_KEY}: give the one to import"
        )
    return carrying[0]


class _Dumper(yaml.SafeDumper):
    """Block style with lists indented under their key, as policy/lahar.yaml is written."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


SOURCE_LINE = "# Lahar's policy imported from Volcano's scheduler configuration "


def rendered(imported: Imported, source: str) -> str:
    """The policy file: a header naming the source, then the policy as YAML."""
    header = (
        f"{SOURCE_LINE}{source}\n"
        f"# by `lahar policy import`: import again rather than edit (`--check` tells when this\n"
        "# file is no longer what the configuration imports to). What each Volcano setting\n"
        "# became: docs/policy-import.md; what each plugin does: policy/lahar.yaml.\n"
    )
    body = yaml.dump(imported.document, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    return header + body


def _print_notes(notes: tuple[Note, ...]) -> None:
    for kind in NoteKind:
        for note in notes:
            if note.kind is kind:
                print(f"{PREFIX}: {kind}: {note}", file=sys.stderr)


def _check(out: Path, text: str, source: str, again: str) -> int:
    try:
        found = out.read_text(encoding="utf-8")
    except FileNotFoundError:
        print(f"{out} does not exist: run `{again}`", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{PREFIX}: {out}: cannot read it: {exc.strerror}", file=sys.stderr)
        return 2
    if _past_source(found) == _past_source(text):
        print(f"{out} is what {source} imports to")
        return 0
    print(f"{out} is not what {source} imports to: run `{again}`", file=sys.stderr)
    diff = list(
        difflib.unified_diff(
            found.splitlines(), text.splitlines(), str(out), f"imported from {source}", lineterm=""
        )
    )
    for line in diff[:SHOWN_LINES]:
        print(f"  {line}", file=sys.stderr)
    if len(diff) > SHOWN_LINES:
        print(f"  ... and {len(diff) - SHOWN_LINES} more lines", file=sys.stderr)
    return 1


def _past_source(text: str) -> str:
    """The file but for the header's line naming where it was imported from (a path as typed, or
    stdin): `--check` holds the policy to the configuration, wherever either is read from."""
    first, _, rest = text.partition("\n")
    return rest if first.startswith(SOURCE_LINE) else text
