"""The metrics reference (docs/metrics.md, its Reference table), read back: which metric names it
documents, with the type and the labels it gives each, and what an exporter says otherwise."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.metrics_core import Metric

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


@dataclass(frozen=True)
class Row:
    """What the table says of one metric."""

    type: str
    labels: frozenset[str]


def reference() -> dict[str, Row]:
    """Every `lahar_*` name in the rows of the Reference table, with its row's type and labels
    (a row may name several metrics that share them)."""
    text = REFERENCE.read_text()
    table = text[text.index("\n## Reference\n") :]
    end = table.find("\n## ", 1)
    table = table if end < 0 else table[:end]
    rows: dict[str, Row] = {}
    for line in table.splitlines():
        if not line.startswith("| `lahar_"):
            continue
        names, kind, labels = line.split("|")[1:4]
        row = Row(kind.strip(), frozenset(re.findall(r"`([a-z_]+)`", labels)))
        rows.update(dict.fromkeys(re.findall(r"`(lahar_[a-z_]+)`", names), row))
    return rows


def documented() -> set[str]:
    return set(reference())


def exposed_name(family: str, kind: str) -> str:
    """The name a family is scraped as: counters end in _total."""
    return f"{family}_total" if kind == "counter" and not family.endswith("_total") else family


def mismatches(families: Iterable[Metric]) -> list[str]:
    """What the table gets wrong of these families (none: nothing): a `lahar_*` name it lacks,
    another type, other labels (read from the family's samples, when it has any). A counter's
    `_created` series, written as a gauge of its own, is part of the counter."""
    rows = reference()
    wrong = []
    for family in families:
        name = exposed_name(family.name, family.type)
        if not name.startswith("lahar_") or name.endswith("_created"):
            continue
        row = rows.get(name)
        if row is None:
            wrong.append(f"{name}: not in the table")
            continue
        if family.type != row.type:
            wrong.append(f"{name}: a {family.type}, the table says {row.type}")
        for sample in family.samples:
            labels = frozenset(sample.labels) - {"le"}  # (a histogram bucket's bound)
            if labels != row.labels:
                wrong.append(
                    f"{name}: labels {sorted(labels)}, the table says {sorted(row.labels)}"
                )
                break
    return wrong
