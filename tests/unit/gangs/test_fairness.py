"""Water-filling deserved shares, queue share and DRF share: exact tables and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.api.resources import Resources
from extender.gangs.fairness import (
    Claim,
    dominant_share,
    overused,
    share,
    water_fill,
)

CLUSTER = Resources({"cpu": 12_000, "memory": 48, "pods": 300})


def cpu(millis: int) -> Resources:
    return Resources({"cpu": millis})


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        pytest.param(
            [Claim("a", 1, cpu(100_000)), Claim("b", 3, cpu(100_000))],
            {"a": 3_000, "b": 9_000},
            id="weights 1:3, both asking for more than the cluster",
        ),
        pytest.param(
            [Claim("a", 1, cpu(1_000)), Claim("b", 3, cpu(100_000))],
            {"a": 1_000, "b": 11_000},
            id="a queue asking little leaves the rest to the other",
        ),
        pytest.param(
            [Claim("a", 1, cpu(100_000), capability=cpu(2_000)), Claim("b", 1, cpu(100_000))],
            {"a": 2_000, "b": 10_000},
            id="capability caps, the rest flows on",
        ),
        pytest.param(
            [Claim("a", 1, cpu(100_000), guarantee=cpu(8_000)), Claim("b", 3, cpu(100_000))],
            {"a": 8_000, "b": 4_000},
            id="guarantee floors a queue above its weighted share",
        ),
        pytest.param(
            [
                Claim("a", 1, cpu(0), guarantee=cpu(10_000)),
                Claim("b", 1, cpu(0), guarantee=cpu(14_000)),
            ],
            {"a": 5_000, "b": 7_000},
            id="guarantees beyond the cluster shrink in proportion",
        ),
        pytest.param(
            [Claim("a", 5, cpu(100_000), deserved=cpu(1_000)), Claim("b", 1, cpu(100_000))],
            {"a": 1_000, "b": 11_000},
            id="deserved from the spec is taken as is",
        ),
        pytest.param(
            [Claim("a", 1, cpu(0)), Claim("b", 1, cpu(0))],
            {"a": 0, "b": 0},
            id="nobody asks, nobody deserves",
        ),
    ],
)
def test_water_fill(claims: list[Claim], expected: dict[str, int]) -> None:
    deserved = water_fill(claims, CLUSTER)
    assert {name: amounts["cpu"] for name, amounts in deserved.items()} == pytest.approx(
        expected, abs=2
    )
    assert all("pods" not in amounts for amounts in deserved.values())


amounts = st.integers(min_value=0, max_value=50_000)
claims = st.lists(
    st.builds(
        Claim,
        name=st.uuids().map(str),
        weight=st.integers(min_value=1, max_value=65_535),
        request=st.builds(cpu, amounts),
        capability=st.one_of(st.just(Resources()), st.builds(cpu, amounts)),
        guarantee=st.one_of(st.just(Resources()), st.builds(cpu, amounts)),
    ),
    max_size=8,
    unique_by=lambda claim: claim.name,
)


@given(claims, amounts)
def test_deserved_never_exceeds_capability_nor_the_cluster_in_total(
    queues: list[Claim], total: int
) -> None:
    deserved = water_fill(queues, cpu(total))
    assert sum(d["cpu"] for d in deserved.values()) <= total
    for claim in queues:
        if "cpu" in claim.capability:
            assert deserved[claim.name]["cpu"] <= claim.capability["cpu"]
        assert deserved[claim.name]["cpu"] >= 0


@given(claims, amounts)
def test_water_fill_is_work_conserving(queues: list[Claim], total: int) -> None:
    """What is not handed out is what nobody could take (every queue at its ceiling)."""
    deserved = water_fill(queues, cpu(total))
    handed = sum(d["cpu"] for d in deserved.values())
    ceilings = sum(
        max(c.request["cpu"], c.guarantee["cpu"])
        if "cpu" not in c.capability
        else min(c.capability["cpu"], max(c.request["cpu"], c.guarantee["cpu"]))
        for c in queues
    )
    assert handed >= min(total, ceilings) - len(queues)  # integer rounding: 1 unit a queue


@pytest.mark.parametrize(
    ("allocated", "deserved", "expected", "over"),
    [
        (cpu(3_000), cpu(6_000), 0.5, False),
        (cpu(6_000), cpu(6_000), 1.0, False),
        (
            Resources({"cpu": 3_000, "memory": 30}),
            Resources({"cpu": 6_000, "memory": 20}),
            1.5,
            True,
        ),
        (Resources({"nvidia.com/gpu": 1}), cpu(6_000), 1.0, True),  # holds what it deserves none of
        (Resources({"pods": 10}), cpu(1), 0.0, False),  # the pod count is not shared
    ],
)
def test_queue_share(
    allocated: Resources, deserved: Resources, expected: float, over: bool
) -> None:
    assert share(allocated, deserved) == expected
    assert overused(allocated, deserved) is over


def test_dominant_share_is_the_largest_fraction_of_any_resource() -> None:
    held = Resources({"cpu": 1_200, "memory": 24, "pods": 290})
    assert dominant_share(held, CLUSTER) == 0.5


def test_water_fill_ends_at_terabytes_of_memory() -> None:
    """At this scale floats are coarser than the bisection's 1/1000 of a byte: the fill used to
    loop for ever (the extender's event loop with it). Found by `lahar simulate` on 100 nodes of
    128Gi with more demand than the cluster holds."""
    total = Resources({"cpu": 3_200_000, "memory": 100 * 128 * 2**30})
    claims = [
        Claim(name, weight, Resources({"cpu": 5_000_000, "memory": 200 * 128 * 2**30}))
        for name, weight in (("a", 3), ("b", 2), ("c", 1))
    ]
    deserved = water_fill(claims, total)
    assert sum(d["memory"] for d in deserved.values()) <= total["memory"]
    assert deserved["a"]["memory"] > deserved["b"]["memory"] > deserved["c"]["memory"]
    assert total["memory"] - sum(d["memory"] for d in deserved.values()) < 10
