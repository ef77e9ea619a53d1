"""Kubernetes resource quantities, parsed exactly.

The grammar is Kubernetes' own (`k8s.io/apimachinery/pkg/api/resource`): a signed decimal number and
one suffix, binary (`Ki` … `Ei`), decimal (`n u m k M G T P E`) or an exponent (`1e3`, `5E-1`).
Values are `Decimal`s, never floats, so `0.1` and `100m` are the same amount. `to_units` rounds up
to the integer unit the scheduler counts in (millicores for cpu, whole units for everything else),
as Kubernetes' `MilliValue()`/`Value()` do. A malformed quantity raises `ValueError` saying what is
wrong; the caller (a pydantic model) adds the field's name.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    # `\d+(?:\.\d*)?`, not `\d+\.?\d*`: the latter backtracks quadratically on a long digit run.
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exponent>[+-]?\d+)|(?P<decimal>[numkMGTPE]?))"
)
# Kubernetes refuses exponents this large too; it also keeps Decimal arithmetic bounded.
_MAX_EXPONENT = 100
_MAX_LENGTH = 64  # far beyond any real quantity; keeps hostile input cheap
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})

Quantity = str | int | float


def parse_quantity(value: Quantity) -> Decimal:
    """The exact amount `value` stands for; `ValueError` when it is not a quantity."""
    if isinstance(value, bool):
        raise ValueError(f"expected a quantity such as '500m' or '2Gi', got {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite quantity, got {value!r}")
        return Decimal(repr(value))
    if isinstance(value, str) and len(value) > _MAX_LENGTH:
        raise ValueError(f"invalid quantity: {len(value)} characters, at most {_MAX_LENGTH}")
    match = _QUANTITY.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(
            f"invalid quantity {value!r}: expected a number and a suffix like 500m, 2Gi, 1e3"
        )
    try:
        number = Decimal(match["number"])
    except InvalidOperation as exc:  # pragma: no cover - the pattern only admits numbers
        raise ValueError(f"invalid quantity {value!r}") from exc
    if match["binary"]:
        return number * _BINARY[match["binary"]]
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"invalid quantity {value!r}: exponent out of range")
        return number.scaleb(exponent)
    return number * _DECIMAL[match["decimal"] or ""]


def to_units(amount: Decimal, resource: str) -> int:
    """`amount` in the integer unit the scheduler counts `resource` in, rounded up."""
    scaled = amount * 1000 if resource == "cpu" else amount
    return math.ceil(scaled)


def units_quantity(units: int, resource: str) -> str:
    """`units` of `resource` exactly, as a Kubernetes quantity (cpu millicores as `500m` or `2`)."""
    if resource == "cpu" and units % 1000:
        return f"{units}m"
    return f"{units // 1000}" if resource == "cpu" else f"{units}"


def format_units(units: int, resource: str) -> str:
    """A short human form of `units` of `resource`: cpu in cores, bytes in Ki/Mi/Gi, else plain.

    For messages only: byte amounts are shown to three significant digits.
    """
    if resource == "cpu":
        return units_quantity(units, resource)
    if resource in _BYTE_RESOURCES or resource.startswith("hugepages-"):
        for suffix, size in reversed(_BINARY.items()):
            if abs(units) >= size:
                return f"{units / size:.3g}{suffix}"
    return f"{units}"
