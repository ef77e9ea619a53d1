"""Durations as Go writes them (`90s`, `1h30m`, `1.5h`, `250ms`): what Volcano's annotations use.

`parse_duration` returns seconds; anything else than a sequence of decimal numbers each with a unit
(ns, us, µs, ms, s, m, h), optionally signed, is a `ValueError` saying why. `duration_or_none` is
for a field the admission webhook has already checked: its seconds, None when the field is absent
or unreadable. Pure.
"""

from __future__ import annotations

import re

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
# `\d+(?:\.\d*)?`, not `\d+\.?\d*`, which backtracks quadratically on a long digit run.
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_MAX_LENGTH = 64  # far beyond any real duration; keeps hostile input cheap


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}: empty")
    if len(body) > _MAX_LENGTH:
        raise ValueError(f"invalid duration: {len(text)} characters, at most {_MAX_LENGTH}")
    seconds, at = 0.0, 0
    while match := _PART.match(body, at):
        seconds += float(match[1]) * _UNITS[match[2]]
        at = match.end()
    if at != len(body):
        raise ValueError(
            f"invalid duration {text!r}: expected numbers with units ns, us, ms, s, m or h "
            "(e.g. 90s, 1h30m)"
        )
    return -seconds if text.startswith("-") else seconds


def duration_or_none(text: str | None) -> float | None:
    """Seconds in a Go duration string; None when it is absent, empty or unreadable."""
    if not text:
        return None
    try:
        return parse_duration(text)
    except ValueError:
        return None
