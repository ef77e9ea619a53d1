"""Names in the order a person counts them: `w-10` after `w-9`, `node10` after `node9`.

`natural_key` splits a name into its runs of digits and the text between them, and compares the
runs of digits as numbers and the text as text (a name with no digit sorts as plain text; a name
is before its longer forms: `a` before `a-1`). The simulation lists pods and nodes this way: a
snapshot's tasks, the report's node timelines. Pure.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[str | int, ...]:
    """A sort key for `name`: its text and numbers in turn, the numbers compared as numbers."""
    parts = _DIGITS.split(name)
    # (split with a group alternates: text, digits, text...; so like positions hold like types)
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts))
