"""Kubernetes' name rules: None for a valid name, else a reason that says what is wrong."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from extender.admission.names import dns_1035_label, dns_label, dns_subdomain, label_value

Rule = Callable[[str], str | None]

VALID: list[tuple[Rule, str]] = [
    (dns_label, "a"),
    (dns_label, "0"),
    (dns_label, "worker-0"),
    (dns_label, "1st"),
    (dns_label, "a" * 63),
    (dns_1035_label, "a"),
    (dns_1035_label, "tf-job2"),
    (dns_1035_label, "a" * 63),
    (dns_subdomain, "a"),
    (dns_subdomain, "claim.data-0"),
    (dns_subdomain, "0.1"),
    (dns_subdomain, "a" * 253),
    (label_value, ""),
    (label_value, "a"),
    (label_value, "Tf_Job.2-x"),
    (label_value, "A" * 63),
]

INVALID: list[tuple[Rule, str, str]] = [
    (dns_label, "", "lower case"),
    (dns_label, "Worker", "lower case"),
    (dns_label, "-a", "starting and ending"),
    (dns_label, "a-", "starting and ending"),
    (dns_label, "a.b", "lower case"),
    (dns_label, "a_b", "lower case"),
    (dns_label, "a" * 64, "at most 63 characters (it is 64)"),
    (dns_1035_label, "1st", "starting with a letter"),
    (dns_1035_label, "a-", "lower case"),
    (dns_1035_label, "Ab", "lower case"),
    (dns_1035_label, "a" * 64, "at most 63 characters (it is 64)"),
    (dns_subdomain, "", "each part"),
    (dns_subdomain, "a..b", "each part"),
    (dns_subdomain, ".a", "each part"),
    (dns_subdomain, "A.b", "each part"),
    (dns_subdomain, "a" * 254, "at most 253 characters (it is 254)"),
    (label_value, "-a", "starting and ending"),
    (label_value, "a.", "starting and ending"),
    (label_value, "a b", "letters, digits"),
    (label_value, "a" * 64, "at most 63 characters to be a label value (it is 64)"),
]


@pytest.mark.parametrize(
    ("rule", "name"), VALID, ids=[f"{rule.__name__}-{name[:12]}" for rule, name in VALID]
)
def test_valid_names(rule: Rule, name: str) -> None:
    assert rule(name) is None


@pytest.mark.parametrize(
    ("rule", "name", "reason"),
    INVALID,
    ids=[f"{rule.__name__}-{name[:12] or 'empty'}" for rule, name, _ in INVALID],
)
def test_invalid_names_say_why(rule: Rule, name: str, reason: str) -> None:
    found = rule(name)
    assert found is not None
    assert reason in found


@pytest.mark.parametrize("rule", [dns_label, dns_1035_label, dns_subdomain, label_value])
def test_a_huge_name_is_refused_by_its_length_cheaply(rule: Rule) -> None:
    found = rule("a" * 1_000_000)
    assert found is not None
    assert "(it is 1000000)" in found
