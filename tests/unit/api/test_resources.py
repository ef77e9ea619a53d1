"""Resource vectors: the arithmetic plans and drains lean on, checked against plain dicts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from extender.api.resources import Resources

NAMES = st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"])
AMOUNTS = st.dictionaries(NAMES, st.integers(min_value=-8, max_value=8))


@given(AMOUNTS, AMOUNTS)
def test_within_takes_per_resource_what_is_free(
    wanted: dict[str, int], free: dict[str, int]
) -> None:
    expected = {k: max(0, min(v, free.get(k, 0))) for k, v in wanted.items()}
    assert Resources(wanted).within(Resources(free)) == Resources(expected)


@given(AMOUNTS, AMOUNTS)
def test_sums_and_differences_match_plain_arithmetic(
    one: dict[str, int], two: dict[str, int]
) -> None:
    names = one.keys() | two.keys()
    assert Resources(one) + Resources(two) == Resources(
        {k: one.get(k, 0) + two.get(k, 0) for k in names}
    )
    assert Resources(one) - Resources(two) == Resources(
        {k: one.get(k, 0) - two.get(k, 0) for k in names}
    )


def test_within_nothing_free_is_empty() -> None:
    assert not Resources({"cpu": 2000, "memory": 4}).within(Resources())
