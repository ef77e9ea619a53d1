"""Lahar's alert rules (charts/lahar/files/alerts/rules.yaml) as Prometheus reads them: promtool
checks the file and runs its unit tests (tests/data/alerts/rules_test.yaml), in which every alert
has a case where it fires and one where it stays quiet; every alert carries a severity, a summary,
a description and a runbook_url naming a section of docs/alerts.md; every metric a rule reads,
and every label its selectors name, is in the metrics reference; the chart's PrometheusRule and
manifests/alerts/ carry these same rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm import CHART, template
from tests.metrics_reference import reference
from tests.unit.promql import lahar_names, promtool, undocumented, unknown_labels

REPO = Path(__file__).resolve().parents[2]
RULES = CHART / "files" / "alerts" / "rules.yaml"
RULE_TESTS = REPO / "tests" / "data" / "alerts" / "rules_test.yaml"
RUNBOOK = REPO / "docs" / "alerts.md"
MANIFESTS = REPO / "manifests" / "alerts"
SEVERITIES = {"critical", "warning", "info"}


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


ALERTS = sorted({rule["alert"] for rule in _rules() if "alert" in rule})
RECORDED = {rule["record"] for rule in _rules() if "record" in rule}


def _anchors(markdown: str) -> set[str]:
    """The anchors GitHub makes of a document's headings: lower case, punctuation dropped,
    spaces made dashes."""
    headings = re.findall(r"^#{1,6} +(.+?) *$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_promtool_finds_the_rules_valid() -> None:
    status, output = promtool("check", "rules", "--lint=all", "--lint-fatal", RULES)
    print(output)
    assert status == 0, output
    assert f"SUCCESS: {len(_rules())} rules found" in output


def test_promtool_unit_tests_of_the_rules_pass() -> None:
    status, output = promtool("test", "rules", RULE_TESTS)
    print(output)
    assert status == 0, output


@pytest.mark.parametrize("alert", ALERTS)
def test_every_alert_has_a_firing_and_a_quiet_case(alert: str) -> None:
    cases = [
        case
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case["alertname"] == alert
    ]
    assert any(case.get("exp_alerts") for case in cases), f"{alert}: no case where it fires"
    assert any(not case.get("exp_alerts") for case in cases), f"{alert}: no case where it is quiet"


@pytest.mark.parametrize("alert", ALERTS)
def test_every_alert_has_a_severity_its_words_and_a_runbook_section(alert: str) -> None:
    anchors = _anchors(RUNBOOK.read_text())
    for rule in (rule for rule in _rules() if rule.get("alert") == alert):
        assert rule["labels"]["severity"] in SEVERITIES
        annotations = rule["annotations"]
        assert annotations["summary"].strip()
        assert annotations["description"].strip()
        page, _, anchor = annotations["runbook_url"].partition("#")
        assert page == "docs/alerts.md"
        assert anchor in anchors, f"{alert}: docs/alerts.md has no section #{anchor}"


@pytest.mark.parametrize("rule", _rules(), ids=lambda rule: rule.get("alert") or rule["record"])
def test_every_metric_and_label_a_rule_reads_is_documented(rule: dict[str, Any]) -> None:
    names = lahar_names(rule["expr"])
    assert names, "the rule reads no Lahar metric"
    assert undocumented(names, reference()) == set()
    assert unknown_labels(rule["expr"], reference()) == set()
    assert {name for name in names if ":" in name} <= RECORDED


def test_recording_rules_come_before_the_rules_that_read_them() -> None:
    seen: set[str] = set()
    for rule in _rules():
        assert {n for n in lahar_names(rule["expr"]) if ":" in n} <= seen, rule
        if "record" in rule:
            seen.add(rule["record"])


def test_manifests_alerts_carry_the_canonical_rules() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    (resource,) = kustomization["resources"]
    rule = yaml.safe_load((MANIFESTS / resource).read_text())
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["metadata"]["namespace"] == "lahar-system"
    assert rule["spec"] == yaml.safe_load(RULES.read_text()), (
        f"{MANIFESTS / resource}: its spec differs from {RULES}; copy the groups over"
    )


@pytest.mark.parametrize(
    ("flags", "labels"),
    [
        ([], None),
        (["--set", "alerts.enabled=false"], None),
        (["--set", "alerts.enabled=true"], {"app.kubernetes.io/part-of": "lahar"}),
        (
            ["--set", "alerts.enabled=true", "--set", "alerts.labels.release=monitoring"],
            {"app.kubernetes.io/part-of": "lahar", "release": "monitoring"},
        ),
    ],
)
def test_the_chart_renders_the_canonical_rules_when_enabled(
    flags: list[str], labels: dict[str, str] | None
) -> None:
    found = [doc for doc in template(*flags) if doc["kind"] == "PrometheusRule"]
    if labels is None:
        assert found == []
        return
    (rule,) = found
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["namespace"] == "lahar-system"
    assert rule["metadata"]["labels"] == labels
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
