"""The demo's live table: one row per job (phase, pods bound of the gang's minimum, placements,
why it waits), redrawn in place on a terminal and printed only when it changes otherwise (a log,
a CI job), so the output reads well either way.

`render` is pure (rows to justified lines; unit-tested); `LiveTable` does the drawing. A table
that redraws itself is a few ANSI escapes (cursor up, clear line), not worth a dependency every
installation of the CLI would carry.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

HEADERS = ("JOB", "PHASE", "BOUND", "NODES", "WAITING FOR")


@dataclass(frozen=True)
class JobRow:
    job: str
    phase: str
    bound: int
    minimum: int
    nodes: str  # "node-a:4, node-b:2" (pods bound per node)
    waiting_for: str = ""

    def cells(self) -> tuple[str, ...]:
        bound = f"{self.bound}/{self.minimum}"
        return (self.job, self.phase, bound, self.nodes or "-", self.waiting_for)


def justify(table: Sequence[Sequence[str]], width: int = 10_000) -> list[str]:
    """Rows of cells as left-justified columns two spaces apart, each line cut to `width` with
    an ellipsis (the last column is not padded)."""
    columns = len(table[0])
    widths = [max(len(line[c]) for line in table) for c in range(columns - 1)]
    lines = []
    for line in table:
        text = "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False))
        text = f"{text}  {line[-1]}".rstrip()
        lines.append(text if len(text) <= width else text[: width - 1] + "…")
    return lines


def render(rows: Sequence[JobRow], width: int = 120) -> list[str]:
    """The Jobs' table as lines no wider than `width`."""
    return justify([HEADERS, *(row.cells() for row in rows)], width)


class LiveTable:
    """Shows the latest rows: on a terminal the table is redrawn where it stands; elsewhere it is
    printed again only when a row changed."""

    def __init__(self, stream: TextIO = sys.stdout) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._last: list[str] = []
        self._height = 0  # lines drawn on the terminal since the last release

    def show(self, rows: Sequence[JobRow]) -> None:
        width = shutil.get_terminal_size((120, 24)).columns if self.tty else 160
        lines = render(rows, width)
        if lines == self._last:
            return
        if self.tty and self._height:
            self.stream.write(f"\x1b[{self._height}F")  # back to the table's first line
            blank = max(self._height - len(lines), 0)
            self.stream.write("".join(f"\x1b[2K{line}\n" for line in [*lines, *[""] * blank]))
            self._height = max(self._height, len(lines))
        else:
            self.stream.write("\n".join(lines) + "\n")
            self._height = len(lines)
        self.stream.flush()
        self._last = lines

    def release(self) -> None:
        """Leave the table as it stands; what is written next goes below it."""
        self._last, self._height = [], 0
