"""Quantities parse exactly as Kubernetes parses them, and garbage is refused with a reason."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.api.quantity import format_units, parse_quantity, to_units, units_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", Decimal("0.1")),
        ("0.5", Decimal("0.5")),
        ("1", Decimal(1)),
        ("1.5Gi", Decimal(1.5 * 2**30)),
        ("1e3", Decimal(1000)),
        ("5E-1", Decimal("0.5")),
        ("2k", Decimal(2000)),
        ("128974848", Decimal(128974848)),
        ("129M", Decimal(129_000_000)),
        ("123Mi", Decimal(123 * 2**20)),
        (".5", Decimal("0.5")),
        ("1.", Decimal(1)),
        ("+3", Decimal(3)),
        ("250u", Decimal("0.00025")),
        ("7n", Decimal("7e-9")),
        ("1Ei", Decimal(2**60)),
        (" 2 ", Decimal(2)),
    ],
)
def test_parses_kubernetes_quantities(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["", "abc", "1.2.3", "1Ki1", "1 Gi", "1ki", "1KI", "Gi", "1e", "--1", "1e999", "0x10"]
)
def test_refuses_what_is_not_a_quantity(text: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text)


@pytest.mark.parametrize("value", [True, float("nan"), float("inf")])
def test_refuses_non_quantity_json_values(value: object) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "resource", "units"),
    [
        ("100m", "cpu", 100),
        ("1", "cpu", 1000),
        ("0.0001", "cpu", 1),  # rounded up, like Kubernetes' MilliValue
        ("1.5", "nvidia.com/gpu", 2),  # rounded up, like Value
        ("1Gi", "memory", 2**30),
        ("1500m", "memory", 2),
    ],
)
def test_units_round_up(text: str, resource: str, units: int) -> None:
    assert to_units(parse_quantity(text), resource) == units


SUFFIXES = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(sorted(SUFFIXES)))
def test_integer_with_suffix_is_exact(number: int, suffix: str) -> None:
    assert parse_quantity(f"{number}{suffix}") == number * SUFFIXES[suffix]


@given(st.integers(min_value=0, max_value=10**9))
def test_millicores_round_trip(milli: int) -> None:
    assert to_units(parse_quantity(f"{milli}m"), "cpu") == milli
    assert to_units(parse_quantity(format_units(milli, "cpu")), "cpu") == milli


@given(st.text(max_size=12))
def test_any_text_parses_or_raises_value_error(text: str) -> None:
    try:
        value = parse_quantity(text)
    except ValueError:
        return
    assert isinstance(value, Decimal)


@pytest.mark.parametrize(
    ("units", "resource", "shown"),
    [
        (1500, "cpu", "1500m"),
        (2000, "cpu", "2"),
        (3 * 2**30, "memory", "3Gi"),
        (1536 * 2**20, "memory", "1.5Gi"),
        (1000, "memory", "1000"),
        (4, "nvidia.com/gpu", "4"),
    ],
)
def test_format_for_messages(units: int, resource: str, shown: str) -> None:
    assert format_units(units, resource) == shown


@given(
    st.integers(min_value=0, max_value=2**62), st.sampled_from(["cpu", "memory", "nvidia.com/gpu"])
)
def test_units_written_as_a_quantity_read_back_the_same(units: int, resource: str) -> None:
    assert to_units(parse_quantity(units_quantity(units, resource)), resource) == units


@pytest.mark.parametrize("text", ["1" * 50_000 + "x", "1" * 65, "." + "5" * 100])
def test_long_hostile_text_is_refused_quickly(text: str) -> None:
    # The webhook parses quantities users send: a long digit run once backtracked quadratically.
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(text)
