"""Resource vectors: amounts per resource name in the scheduler's integer units.

`Resources` is immutable and stores only non-zero amounts, so the vectors of ordinary pods hold two
or three entries and arithmetic on them is cheap. cpu is in millicores; memory, storage, `pods` and
extended resources (`nvidia.com/gpu`) are in whole units. The pod count is a resource like any
other: a pod requests `pods: 1`, a node offers its `pods` allocatable, so "too many pods" is a fit
failure like "not enough cpu".
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Self

from extender.api.quantity import Quantity, format_units, parse_quantity, to_units, units_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"


class Resources(Mapping[str, int]):
    """An immutable mapping of resource name to amount; missing names are zero."""

    __slots__ = ("_amounts", "_hash")

    def __init__(self, amounts: Mapping[str, int] | None = None) -> None:
        # Sorted by name, so iteration, messages and `shortfall` are deterministic.
        self._amounts: dict[str, int] = {k: v for k, v in sorted((amounts or {}).items()) if v}
        self._hash: int | None = None  # computed when first asked (most vectors never are)

    @classmethod
    def _of(cls, amounts: dict[str, int]) -> Resources:
        """From a dict already sorted by name and free of zeros (arithmetic's fast path: the
        scheduler adds and subtracts these millions of times)."""
        made = object.__new__(cls)
        made._amounts, made._hash = amounts, None
        return made

    def _combined(self, total: dict[str, int], grew: bool) -> Resources:
        """`total` (this vector's amounts with another's merged in) as a Resources: re-sorted
        only when it gained a name, zeros dropped."""
        if grew:
            return Resources(total)
        if 0 in total.values():
            total = {k: v for k, v in total.items() if v}
        return Resources._of(total)

    @classmethod
    def parse(cls, quantities: Mapping[str, Quantity]) -> Self:
        """From a Kubernetes ResourceList (`{"cpu": "500m"}`); negative amounts are an error."""
        amounts: dict[str, int] = {}
        for name, quantity in quantities.items():
            try:
                units = to_units(parse_quantity(quantity), name)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from exc
            if units < 0:
                raise ValueError(f"{name}: must not be negative, got {quantity!r}")
            amounts[name] = units
        return cls(amounts)

    def __getitem__(self, name: str) -> int:
        return self._amounts.get(name, 0)

    def get(self, name: str, default: int = 0) -> int:  # type: ignore[override]
        return self._amounts.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._amounts

    def __iter__(self) -> Iterator[str]:
        return iter(self._amounts)

    def __len__(self) -> int:
        return len(self._amounts)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={format_units(v, k)}" for k, v in self._amounts.items())
        return f"Resources({shown})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._amounts == other._amounts
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._amounts.items()))
        return self._hash

    def __add__(self, other: Resources) -> Resources:
        if not other._amounts:
            return self
        if not self._amounts:
            return other
        total = dict(self._amounts)
        for name, amount in other._amounts.items():
            total[name] = total.get(name, 0) + amount
        return self._combined(total, len(total) > len(self._amounts))

    def __sub__(self, other: Resources) -> Resources:
        if not other._amounts:
            return self
        rest = dict(self._amounts)
        for name, amount in other._amounts.items():
            rest[name] = rest.get(name, 0) - amount
        return self._combined(rest, len(rest) > len(self._amounts))

    def maximum(self, other: Resources) -> Resources:
        """Per resource, the larger of the two amounts."""
        merged = dict(self._amounts)
        for name, amount in other._amounts.items():
            merged[name] = max(merged.get(name, 0), amount)
        return Resources(merged)

    def replace(self, other: Resources) -> Resources:
        """These amounts with every resource named in `other` taken from `other`."""
        return Resources({**self._amounts, **other._amounts})

    def within(self, free: Mapping[str, int]) -> Resources:
        """Per resource, as much of this as `free` has (none of what it has none or less of)."""
        has = _plain(free)
        return Resources._of(
            {k: least for k, v in self._amounts.items() if (least := min(v, has.get(k, 0))) > 0}
        )

    def times(self, factor: int) -> Resources:
        """Every amount `factor` (a positive whole number) times over."""
        if factor == 1:
            return self
        return Resources._of({k: v * factor for k, v in self._amounts.items()})

    def times_in(self, free: Mapping[str, int]) -> int:
        """How many times over this fits in `free` (0 when it does not fit once; when it asks
        for nothing, more than anyone counts)."""
        most, has = sys.maxsize, _plain(free)
        for name, amount in self._amounts.items():
            if amount > 0:
                times = has.get(name, 0) // amount
                most = min(most, times)
        return max(most, 0)

    def shortfall(self, free: Mapping[str, int]) -> str | None:
        """The first resource (by name) of which this asks more than `free` has, else None."""
        has = _plain(free)
        for name, amount in self._amounts.items():
            if amount > has.get(name, 0):
                return name
        return None

    def quantities(self) -> dict[str, str]:
        """As a Kubernetes ResourceList (`{"cpu": "1500m", "memory": "1073741824"}`), exactly."""
        return {k: units_quantity(v, k) for k, v in self._amounts.items()}

    def describe(self) -> str:
        """`cpu 2, memory 4Gi, pods 1`, for messages."""
        return ", ".join(f"{k} {format_units(v, k)}" for k, v in self._amounts.items())


def _plain(amounts: Mapping[str, int]) -> Mapping[str, int]:
    """The dict under a `Resources` (its lookups without a method call each: a plan asks
    millions), or the mapping as it is."""
    return amounts._amounts if type(amounts) is Resources else amounts


EMPTY = Resources()
ONE_POD = Resources({PODS: 1})
