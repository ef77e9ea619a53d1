"""Required node affinity: operators, terms (OR of ANDs), matchFields on the node's name."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.api.affinity import NodeSelectorRequirement
from extender.api.objects import Pod

LABELS = {"zone": "a", "gpus": "4"}


def pod_with(*terms: dict[str, Any]) -> Pod:
    required = {"nodeSelectorTerms": list(terms)}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return Pod.model_validate({"metadata": {"name": "p"}, "spec": {"affinity": affinity}})


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (expr("zone", "In", "a", "b"), True),
        (expr("zone", "In", "b"), False),
        (expr("zone", "NotIn", "b"), True),
        (expr("missing", "NotIn", "b"), True),
        (expr("zone", "Exists"), True),
        (expr("missing", "Exists"), False),
        (expr("missing", "DoesNotExist"), True),
        (expr("gpus", "Gt", "2"), True),
        (expr("gpus", "Lt", "2"), False),
        (expr("zone", "Gt", "2"), False),  # not a number: no match
        (expr("zone", "Near", "a"), False),  # unknown operator: no match
    ],
)
def test_each_operator(requirement: dict[str, Any], expected: bool) -> None:
    pod = pod_with({"matchExpressions": [requirement]})
    assert pod.may_run_on(LABELS, (), "n1") is expected


def test_terms_are_ored_and_requirements_anded() -> None:
    both = {"matchExpressions": [expr("zone", "In", "a"), expr("gpus", "Gt", "8")]}
    assert not pod_with(both).may_run_on(LABELS, (), "n1")
    assert pod_with(both, {"matchExpressions": [expr("zone", "In", "a")]}).may_run_on(
        LABELS, (), "n1"
    )


def test_match_fields_name_the_node_and_an_empty_term_matches_nothing() -> None:
    by_name = pod_with({"matchFields": [expr("metadata.name", "In", "n2")]})
    assert by_name.may_run_on(LABELS, (), "n2") and not by_name.may_run_on(LABELS, (), "n1")
    assert not pod_with({}).may_run_on(LABELS, (), "n1")
    assert Pod().may_run_on(LABELS, (), "n1")  # no affinity: any node


@given(st.text(max_size=5), st.lists(st.text(max_size=5), max_size=3), st.none() | st.text())
def test_in_and_notin_are_complements(key: str, values: list[str], value: str | None) -> None:
    inside = NodeSelectorRequirement(key=key, operator="In", values=values)
    outside = NodeSelectorRequirement(key=key, operator="NotIn", values=values)
    assert inside.satisfied_by(value) != outside.satisfied_by(value)
