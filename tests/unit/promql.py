"""PromQL as Prometheus itself reads it, for the tests of what Lahar ships for Prometheus and
Grafana (alert rules, dashboards): promtool (built from the Go module pinned in
tests/controlplane/prometheus by `devcluster.ensure_tool`), its output kept for the failure
message; and the metric names an expression reads and the labels its selectors name, held
against the metrics reference (a histogram is documented by its family name, read as `_bucket`,
`_sum` and `_count`; `instance` and `job` are the labels a scrape adds to every series)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from extender.devcluster import ensure_tool
from tests.metrics_reference import Row

# A name in an expression (metric, recorded series, function, label): Prometheus' grammar.
_NAME = re.compile(r"(?<![\w:])[a-zA-Z_:][\w:]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_SELECTOR = re.compile(r"(?<![\w:])(lahar_\w+)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"(\w+)\s*(?:=~|!~|!=|=)")
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")
SCRAPE_LABELS = frozenset({"instance", "job"})


def promtool(*args: str | Path) -> tuple[int, str]:
    """Run promtool with `args`; its exit status and its whole output (stdout then stderr)."""
    binary = ensure_tool("prometheus") / "promtool"
    done = subprocess.run(
        [str(binary), *map(str, args)], capture_output=True, text=True, check=False, timeout=120
    )
    return done.returncode, done.stdout + done.stderr


def lahar_names(expr: str) -> set[str]:
    """The `lahar_*` names `expr` reads: metrics, and recorded series (`level:lahar_...:op`)."""
    bare = _STRING.sub('""', expr)  # label values are not names
    return {name for name in _NAME.findall(bare) if "lahar_" in name}


def _family(name: str, reference: dict[str, Row]) -> str | None:
    """The documented metric `name` reads (a histogram's for its series), or None."""
    if name in reference:
        return name
    for suffix in HISTOGRAM_SERIES:
        family = name.removesuffix(suffix)
        if family != name and family in reference and reference[family].type == "histogram":
            return family
    return None


def undocumented(names: set[str], reference: dict[str, Row]) -> set[str]:
    """The metric names among `names` that the reference lacks; a recorded series (a name with a
    colon) is the rule file's to define, not the reference's."""
    return {name for name in names if ":" not in name and _family(name, reference) is None}


def unknown_labels(expr: str, reference: dict[str, Row]) -> set[str]:
    """`metric.label` for every label a selector of `expr` names that its documented metric
    does not carry (`le` is every histogram bucket's)."""
    bare = _STRING.sub('""', expr)
    unknown = set()
    for name, matchers in _SELECTOR.findall(bare):
        family = _family(name, reference)
        if family is None:
            continue  # (undocumented() says so)
        carried = reference[family].labels | SCRAPE_LABELS
        if name.endswith("_bucket"):
            carried |= {"le"}
        unknown |= {f"{name}.{label}" for label in set(_MATCHER.findall(matchers)) - carried}
    return unknown
