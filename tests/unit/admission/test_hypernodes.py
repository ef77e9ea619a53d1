"""HyperNode rules on CREATE and UPDATE: a tier of 0 or more, at least one member, one selector
per member, an exact name that is a DNS subdomain, a pattern that is not empty and compiles; every
problem at once, each at its field; and the warnings for a labelMatch that chooses nothing."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.admission.hypernodes import check_hyper_node, hyper_node_warnings
from tests.builders import HyperNodeBuilder
from tests.unit.admission.helpers import by_path

ONE_OF = "must give one of exactMatch, regexMatch or labelMatch"


def switch() -> HyperNodeBuilder:
    return HyperNodeBuilder("s0")


@pytest.mark.parametrize(
    "builder",
    [
        switch().nodes("n0", "n1"),
        switch().nodes("node-0.rack-1.example.com"),
        switch().regex("^n[0-9]+$"),
        switch().regex("gpu"),
        switch().labelled(rack="r1"),
        switch().member(labelMatch={"matchExpressions": [{"key": "rack", "operator": "Exists"}]}),
        switch().tier(2, "spine").hyper_nodes("s0", "s1"),
        switch().tier(0).nodes("n0"),
        switch().nodes("n0").regex("^m").labelled(rack="r2"),
    ],
    ids=[
        "exact-nodes",
        "exact-subdomain",
        "regex",
        "regex-anywhere",
        "labels",
        "label-expressions",
        "hyper-nodes",
        "tier-zero",
        "one-of-each-kind",
    ],
)
def test_good_hyper_nodes(builder: HyperNodeBuilder) -> None:
    assert check_hyper_node(builder.build()) == []


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (switch(), {"spec.members": "must list at least one member"}),
        (switch().set("spec.members", None), {"spec.members": "must list at least one member"}),
        (switch().member(), {"spec.members[0].selector": ONE_OF}),
        (
            switch().member(exactMatch={"name": "n0"}, regexMatch={"pattern": "n"}),
            {
                "spec.members[0].selector": "gives exactMatch and regexMatch: give only one of "
                "exactMatch, regexMatch or labelMatch"
            },
        ),
        (
            switch().member(regexMatch={"pattern": "n"}, labelMatch={"matchLabels": {"a": "b"}}),
            {"spec.members[0].selector": "gives regexMatch and labelMatch"},
        ),
        (
            switch().nodes(""),
            {"spec.members[0].selector.exactMatch.name": "must not be empty"},
        ),
        (
            switch().nodes("Node_0"),
            {"spec.members[0].selector.exactMatch.name": "'Node_0' must be lower case letters"},
        ),
        (
            switch().nodes("n" * 254),
            {"spec.members[0].selector.exactMatch.name": "must be at most 253 characters"},
        ),
        (
            switch().regex(""),
            {"spec.members[0].selector.regexMatch.pattern": "must not be empty"},
        ),
        (
            switch().regex("n[0-9"),
            {
                "spec.members[0].selector.regexMatch.pattern": "'n[0-9' is not a regular "
                "expression: unterminated character set"
            },
        ),
        (
            switch().regex("(a"),
            {"spec.members[0].selector.regexMatch.pattern": "missing ), unterminated subpattern"},
        ),
        (switch().nodes("n0").tier(-1), {"spec.tier": "must be 0 or more, got -1"}),
        (
            switch().nodes("n0").tier(1, "t" * 254),
            {"spec.tierName": "must be at most 253 characters (it is 254)"},
        ),
        (switch().nodes("n0").tier("1"), {"spec.tier": "Input should be a valid integer"}),
        (
            switch().member("Switch", exactMatch={"name": "n0"}),
            {"spec.members[0].type": "Input should be 'Node' or 'HyperNode'"},
        ),
        (
            switch().set("spec.members", [{"selector": {"exactMatch": {"name": "n0"}}}]),
            {"spec.members[0].type": "Field required"},
        ),
    ],
    ids=[
        "no-members",
        "members-null",
        "no-selector",
        "exact-and-regex",
        "regex-and-labels",
        "exact-empty",
        "exact-not-a-name",
        "exact-too-long",
        "regex-empty",
        "regex-unterminated-set",
        "regex-unterminated-group",
        "tier-negative",
        "tier-name-too-long",
        "tier-not-a-number",
        "type-unknown",
        "type-missing",
    ],
)
def test_bad_hyper_nodes(builder: HyperNodeBuilder, expected: dict[str, str]) -> None:
    found = by_path(check_hyper_node(builder.build()))
    assert sorted(found) == sorted(expected)
    for path, reason in expected.items():
        assert reason in found[path], (path, found[path])


def test_every_problem_is_reported_at_once() -> None:
    hyper_node = (
        switch()
        .tier(-2)
        .nodes("n0", "")
        .member()
        .regex("(")
        .member("HyperNode", exactMatch={"name": "s1"}, labelMatch={})
    )
    assert sorted(by_path(check_hyper_node(hyper_node.build()))) == [
        "spec.members[1].selector.exactMatch.name",
        "spec.members[2].selector",
        "spec.members[3].selector.regexMatch.pattern",
        "spec.members[4].selector",
        "spec.tier",
    ]


def test_a_request_without_an_object_is_refused() -> None:
    assert by_path(check_hyper_node(None)) == {"": "the request carries no HyperNode object"}


SELECTORS = {
    "exactMatch": {"name": "n0"},
    "regexMatch": {"pattern": "^n"},
    "labelMatch": {"matchLabels": {"rack": "r1"}},
}


@settings(max_examples=50)
@given(
    kinds=st.lists(st.sampled_from(sorted(SELECTORS)), unique=True),
    kind=st.sampled_from(["Node", "HyperNode"]),
)
def test_a_member_is_admitted_with_exactly_one_selector(kinds: list[str], kind: str) -> None:
    hyper_node = switch().member(kind, **{k: SELECTORS[k] for k in kinds})
    problems = by_path(check_hyper_node(hyper_node.build()))
    assert ("spec.members[0].selector" in problems) is (len(kinds) != 1)


@settings(max_examples=200)
@given(pattern=st.text(alphabet="ab()[]{}*+?|^$\\.-0123456789", min_size=1, max_size=12))
def test_a_pattern_is_admitted_when_it_compiles(pattern: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(pattern)
        compiles = True
    except re.error:
        compiles = False
    problems = check_hyper_node(switch().regex(pattern).build())
    assert (problems == []) is compiles


@pytest.mark.parametrize(
    ("builder", "warnings"),
    [
        (switch().labelled(rack="r1"), []),
        (switch().nodes("n0").regex("^m"), []),
        (
            switch().nodes("n0").labelled("HyperNode", rack="r1"),
            [
                "spec.members[1].selector.labelMatch takes effect for members of type Node "
                "only: this member of type HyperNode chooses nothing by it"
            ],
        ),
        (
            switch().member(labelMatch={}),
            ["spec.members[0].selector.labelMatch is empty: it chooses no node"],
        ),
        (switch().tier("x").labelled("HyperNode", rack="r1"), []),  # refused: no warnings
    ],
    ids=["node-labels", "no-labels", "labels-on-hyper-node", "empty-labels", "refused"],
)
def test_warnings(builder: HyperNodeBuilder, warnings: list[str]) -> None:
    assert hyper_node_warnings(builder.build()) == warnings
