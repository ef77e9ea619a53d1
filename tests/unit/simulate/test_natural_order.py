"""Names in natural order: runs of digits compared as numbers, the text between as text."""

from __future__ import annotations

import pytest

from extender.simulate.natural_order import natural_key


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("w-9", "w-10"),
        ("node9", "node10"),
        ("a", "a-1"),
        ("w", "w-0"),
        ("alpha", "beta"),
        ("gpu-a", "gpu-b"),
        ("rack-2-node-10", "rack-10-node-2"),
        ("w-2", "w-a"),
        ("", "a"),
    ],
)
def test_natural_order(before: str, after: str) -> None:
    assert natural_key(before) < natural_key(after)


def test_names_sort_as_a_person_counts_them() -> None:
    names = ["w-10", "w-9", "w-1", "w", "cpu-b", "cpu-a", "w-100", "node2", "node10"]
    assert sorted(names, key=natural_key) == [
        "cpu-a",
        "cpu-b",
        "node2",
        "node10",
        "w",
        "w-1",
        "w-9",
        "w-10",
        "w-100",
    ]
