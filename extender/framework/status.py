"""Outcomes of a policy decision, as values: a closed set of codes and a reason a user can act on.

A filter that passes returns None; a Status is always a failure. The codes mirror kube-scheduler's:
`UNSCHEDULABLE` nodes stay candidates for preemption (the extender reply's `FailedNodes`),
`UNRESOLVABLE` ones do not (`FailedAndUnresolvableNodes`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from extender.api.quantity import format_units


class Code(enum.Enum):
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reason: str = ""

    @classmethod
    def unschedulable(cls, reason: str) -> Status:
        return cls(Code.UNSCHEDULABLE, reason)

    @classmethod
    def unresolvable(cls, reason: str) -> Status:
        return cls(Code.UNRESOLVABLE, reason)


def insufficient(resource: str, requested: int, free: int) -> str:
    """The reason a node lacks a resource: `Insufficient cpu: requested 2, free 1500m`."""
    return (
        f"Insufficient {resource}: requested {format_units(requested, resource)}, "
        f"free {format_units(max(free, 0), resource)}"
    )
