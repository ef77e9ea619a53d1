"""The metrics reference (docs/operations.md), read back: which metric names it documents."""

from __future__ import annotations

import re
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "operations.md"


def documented() -> set[str]:
    """Every `lahar_*` name in the rows of the metrics reference's table."""
    text = REFERENCE.read_text()
    table = text[text.index("## Metrics reference") :]
    end = table.find("\n## ", 1)
    table = table if end < 0 else table[:end]
    rows = [line for line in table.splitlines() if line.startswith("| `lahar_")]
    return {name for row in rows for name in re.findall(r"`(lahar_[a-z_]+)`", row.split("|")[1])}


def exposed_name(family: str, kind: str) -> str:
    """The name a family is scraped as: counters end in _total."""
    return f"{family}_total" if kind == "counter" and not family.endswith("_total") else family
