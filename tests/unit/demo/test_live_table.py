"""The demo's live table: justified columns, redrawn in place on a terminal, printed again only
on change elsewhere."""

from __future__ import annotations

import io

from extender.demo.live_table import JobRow, LiveTable, justify, render

RUNNING = JobRow("tf-a", "Running", 6, 6, "node-0:4, node-1:2")
WAITING = JobRow("tf-b", "Pending", 0, 6, "", "NotEnoughResources: 6 of 6 members do not fit")


def test_columns_line_up_and_empty_placements_show_a_dash() -> None:
    lines = render([RUNNING, WAITING])
    assert lines[0].split() == ["JOB", "PHASE", "BOUND", "NODES", "WAITING", "FOR"]
    starts = {line.index(cell) for line, cell in zip(lines[1:], ("6/6", "0/6"), strict=True)}
    assert len(starts) == 1  # the BOUND column starts at one offset on every row
    assert "  -  " in lines[2]
    assert lines[2].endswith("6 of 6 members do not fit")


def test_a_line_wider_than_the_terminal_is_cut_with_an_ellipsis() -> None:
    lines = render([WAITING], width=40)
    assert all(len(line) <= 40 for line in lines)
    assert lines[1].endswith("…")


def test_justify_pads_every_column_but_the_last() -> None:
    assert justify([("a", "bb", "c"), ("ccc", "d", "")]) == ["a    bb  c", "ccc  d"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_table_is_redrawn_where_it_stands() -> None:
    out = _Terminal()
    table = LiveTable(out)
    table.show([RUNNING])
    table.show([RUNNING, WAITING])
    text = out.getvalue()
    assert "\x1b[2F" in text  # back up over the header and one row, then redraw
    assert text.count("tf-a") == 2
    table.release()
    table.show([RUNNING])
    assert out.getvalue().endswith(render([RUNNING])[-1] + "\n")
    assert out.getvalue().count("\x1b[") == text.count("\x1b[")  # after release: printed below


def test_elsewhere_the_table_is_printed_only_when_it_changes() -> None:
    out = io.StringIO()
    table = LiveTable(out)
    table.show([RUNNING])
    table.show([RUNNING])
    table.show([RUNNING, WAITING])
    assert out.getvalue().count("tf-a") == 2
    assert "\x1b" not in out.getvalue()
