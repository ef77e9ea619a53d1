"""What went wrong, by its own logs, in each component of the demo's dev cluster.

Each component writes one log file (`ProcessRecord.log`), in the format of its kind:

- Lahar's webhook, Job controller and extender log with `extender.cli.main`'s format
  (`2026-11-26 22:44:13,576 ERROR extender.x: message`): a line of level ERROR or CRITICAL is an
  error, and each `Traceback (most recent call last):` starts a Python traceback
  (`log.exception` writes one of each).
- kube-apiserver, kube-controller-manager and both kube-schedulers log with klog: an error line
  starts with `E` (or `F`, fatal) and the date, e.g. `E1126 22:44:04.109285`.
- etcd and KWOK log one JSON object a line, with its `level` (error and worse are errors).

Go components count `panic: ` lines where Lahar's count tracebacks. A clean demo leaves neither
in Lahar's logs: each is a fault of Lahar's, so the demo's exit code says so. The Kubernetes
components' errors are shown apart and decide nothing: some are benign (at start-up the
apiserver finds endpoints a previous run left; at shutdown etcd, KWOK and the schedulers report
their servers closing). `count_lines` and `summary` are pure; `count_log` reads one file.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


class LogStyle(enum.Enum):
    PYTHON = "python"  # Lahar's own components
    KLOG = "klog"
    JSON = "json"


# Process name (`devcluster`) -> what the summary calls it, for Lahar's components.
LAHAR = {"lahar-webhook": "webhook", "lahar-controller": "controller", "lahar": "extender"}
_GO = {
    "etcd": LogStyle.JSON,
    "kube-apiserver": LogStyle.KLOG,
    "kube-controller-manager": LogStyle.KLOG,
    "kube-scheduler": LogStyle.KLOG,
    "kwok": LogStyle.JSON,
    "lahar-scheduler": LogStyle.KLOG,  # the stock kube-scheduler with Lahar's profiles
}
TRACEBACK = "Traceback (most recent call last):"
_PYTHON_ERROR = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (ERROR|CRITICAL) ")
_KLOG_ERROR = re.compile(r"[EF]\d{4} \d\d:\d\d:\d\d\.\d+ ")
_JSON_ERRORS = {"error", "dpanic", "panic", "fatal"}
EXAMPLES = 3  # error lines shown of a Lahar component that logged some


@dataclass(frozen=True)
class LogCount:
    errors: int = 0
    tracebacks: int = 0  # Python tracebacks; for Go components, panics
    first: tuple[str, ...] = ()  # the first few error lines

    @property
    def clean(self) -> bool:
        return self.errors == 0 and self.tracebacks == 0


@dataclass(frozen=True)
class ComponentLog:
    name: str  # the process's name in the dev cluster
    log: Path
    count: LogCount

    @property
    def lahar(self) -> bool:
        return self.name in LAHAR


def style_of(name: str) -> LogStyle | None:
    """How the component named `name` logs (None: a process this module does not know)."""
    return LogStyle.PYTHON if name in LAHAR else _GO.get(name)


def count_lines(lines: Iterable[str], style: LogStyle) -> LogCount:
    """The error lines and tracebacks (panics) among `lines` of a log written in `style`."""
    errors: list[str] = []
    tracebacks = 0
    for line in lines:
        if style is LogStyle.PYTHON:
            tracebacks += TRACEBACK in line
        elif line.startswith("panic: "):
            tracebacks += 1
        if _is_error(line, style):
            errors.append(line.rstrip("\n"))
    return LogCount(len(errors), tracebacks, tuple(errors[:EXAMPLES]))


def _is_error(line: str, style: LogStyle) -> bool:
    if style is LogStyle.PYTHON:
        return _PYTHON_ERROR.match(line) is not None
    if style is LogStyle.KLOG:
        return _KLOG_ERROR.match(line) is not None
    if not line.startswith("{"):
        return False
    try:
        record = json.loads(line)
    except ValueError:
        return False
    level = record.get("level") if isinstance(record, dict) else None
    return isinstance(level, str) and level.lower() in _JSON_ERRORS


def count_log(name: str, log: Path) -> ComponentLog | None:
    """What the log of component `name` shows (nothing counted when the file is missing); None
    for a component whose log format is not known."""
    style = style_of(name)
    if style is None:
        return None
    try:
        with log.open(errors="replace") as lines:
            count = count_lines(lines, style)
    except FileNotFoundError:
        count = LogCount()
    return ComponentLog(name, log, count)


def summary(components: Sequence[ComponentLog]) -> list[str]:
    """The summary's lines: Lahar's components (with their first error lines, if any), then the
    Kubernetes components apart."""
    ours = [c for c in components if c.lahar]
    theirs = [c for c in components if not c.lahar]
    lines = []
    for component in ours:
        count = component.count
        lines.append(
            f"{LAHAR[component.name]}: {_many(count.errors, 'ERROR line')}, "
            f"{_many(count.tracebacks, 'traceback')} (log: {component.log})"
        )
        lines += [f"    {line[:300]}" for line in count.first]
    if theirs:
        lines.append(
            "Kubernetes components (not counted: some errors are benign at start and stop):"
        )
        for component in theirs:
            count = component.count
            lines.append(
                f"  {component.name}: {_many(count.errors, 'error line')}, "
                f"{_many(count.tracebacks, 'panic')} (log: {component.log})"
            )
    return lines


def _many(count: int, what: str) -> str:
    return f"{count} {what}" if count == 1 else f"{count} {what}s"
