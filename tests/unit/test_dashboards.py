"""Lahar's Grafana dashboards (charts/lahar/files/dashboards/*.json): valid JSON of a recent
schema with a unique uid and the `lahar` tag; unique panel ids; every panel titled and described;
the `datasource` variable the data source of every panel, query and query variable; every query,
with Grafana's variables given values, parsed by Prometheus itself (`promtool check rules` over a
rule file recording each one); every metric a query reads, and every label its selectors name,
in the metrics reference; and the chart makes one ConfigMap per dashboard when asked to."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm import CHART, template
from tests.metrics_reference import reference
from tests.unit.promql import lahar_names, promtool, undocumented, unknown_labels

REPO = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((CHART / "files" / "dashboards").glob("*.json"))
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

# What Grafana puts in place of its variables when it sends a query (a plausible value each).
VALUES = {
    "__rate_interval": "1m",
    "__interval": "30s",
    "__range": "6h",
    "queue": "default",
    "datasource": "prometheus",
}
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


def _load(path: Path) -> dict[str, Any]:
    board: dict[str, Any] = json.loads(path.read_text())
    return board


def _panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside rows included."""
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def _queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, expr) of every panel target and every query variable."""
    found = [
        (f"panel {panel['id']} {target['refId']}", target["expr"])
        for panel in _panels(board)
        for target in panel.get("targets", [])
    ]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            text = query["query"] if isinstance(query, dict) else query
            inner = re.fullmatch(r"label_values\((.+),\s*\w+\)", text)
            found.append((f"variable {variable['name']}", inner.group(1) if inner else text))
    return found


def _substituted(expr: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group)
        assert name in VALUES, f"no value to try for Grafana variable {name}"
        return VALUES[name]

    return _VARIABLE.sub(value, expr)


def test_there_are_the_four_dashboards() -> None:
    assert [path.name for path in DASHBOARDS] == [
        "lahar-extender.json",
        "lahar-gang-life.json",
        "lahar-overview.json",
        "lahar-queues.json",
    ]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.stem)
def test_the_dashboard_says_what_it_is(path: Path) -> None:
    board = _load(path)
    assert board["uid"] == path.stem
    assert board["schemaVersion"] >= 39
    assert board["tags"] == ["lahar"]
    assert board["title"].startswith("Lahar / ")
    assert board["description"].strip()
    assert board["id"] is None  # Grafana's own number, given on import


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.stem)
def test_every_panel_has_its_own_id_a_title_and_a_description(path: Path) -> None:
    panels = list(_panels(_load(path)))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["title"].strip()
        if panel["type"] != "row":
            assert panel["description"].strip(), panel["title"]
            assert panel["targets"], panel["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.stem)
def test_the_datasource_variable_is_used_everywhere(path: Path) -> None:
    board = _load(path)
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    chooser = variables["datasource"]
    assert (chooser["type"], chooser["query"]) == ("datasource", "prometheus")
    for panel in _panels(board):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, (panel["title"], target["refId"])
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.stem)
def test_prometheus_parses_every_query(path: Path, tmp_path: Path) -> None:
    queries = _queries(_load(path))
    rules = [
        {"record": f"dashboard_query_{number}", "expr": _substituted(expr)}
        for number, (_, expr) in enumerate(queries)
    ]
    rule_file = tmp_path / f"{path.stem}.yaml"
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": path.stem, "rules": rules}]}))
    status, output = promtool("check", "rules", rule_file)
    print(output)
    names = "\n".join(f"dashboard_query_{n}: {where}" for n, (where, _) in enumerate(queries))
    assert status == 0, f"{output}\n{names}"
    assert f"SUCCESS: {len(rules)} rules found" in output


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.stem)
def test_every_metric_and_label_a_query_reads_is_in_the_metrics_reference(path: Path) -> None:
    documented = reference()
    for where, expr in _queries(_load(path)):
        names = lahar_names(expr)
        assert names, f"{where} reads no Lahar metric: {expr}"
        assert undocumented(names, documented) == set(), where
        assert unknown_labels(expr, documented) == set(), where
        assert not any(":" in name for name in names), f"{where} needs a recording rule: {expr}"


def _configmaps(*flags: str) -> list[dict[str, Any]]:
    return [
        doc
        for doc in template(*flags)
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"].startswith("lahar-dashboard-")
    ]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], None),
        (["--set", "dashboards.enabled=true"], ("lahar-system", {"grafana_dashboard": "1"})),
        (
            [
                "--set",
                "dashboards.enabled=true",
                "--set",
                "dashboards.namespace=monitoring",
                "--set-json",
                'dashboards.labels={"grafana_dashboard": "1", "team": "batch"}',
            ],
            ("monitoring", {"grafana_dashboard": "1", "team": "batch"}),
        ),
    ],
)
def test_the_chart_makes_a_configmap_per_dashboard_when_enabled(
    flags: list[str], expected: tuple[str, dict[str, str]] | None
) -> None:
    maps = _configmaps(*flags)
    if expected is None:
        assert maps == []
        return
    namespace, labels = expected
    assert sorted(m["metadata"]["name"] for m in maps) == [
        "lahar-dashboard-" + path.stem.removeprefix("lahar-") for path in DASHBOARDS
    ]
    for configmap in maps:
        assert configmap["metadata"]["namespace"] == namespace
        assert configmap["metadata"]["labels"] == {"app.kubernetes.io/part-of": "lahar", **labels}
        ((name, text),) = configmap["data"].items()
        assert json.loads(text) == _load(CHART / "files" / "dashboards" / name)
