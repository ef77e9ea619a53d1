"""What an admission rule finds, as values: a `Problem` names a field path and the reason, and an
`AdmissionDecision` carries every problem found (never only the first) or the JSONPatch that
defaults an object.

Paths are written as `kubectl explain` and the API server's own errors write them
(`spec.tasks[1].minAvailable`). Values quoted back to the user are clipped, so a hostile object
(a megabyte string, a huge number) never makes a huge message; at most `SHOWN` problems are
listed, each clipped to `LONGEST` characters, with a count of the rest. `mapping`, `amounts` and
`by_value` read a raw object's fields the way the rules compare them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from extender.api.quantity import parse_quantity

INT32 = 2**31 - 1  # Volcano's API counts in int32: the bound of every count the rules check
SHOWN = 20  # problems listed in one denial
CLIP = 60  # characters of a value quoted in a message
LONGEST = 1000  # characters of one problem in a denial (a path may hold a user's map key)

Loc = Sequence[str | int]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


@dataclass(frozen=True)
class AdmissionDecision:
    """Allowed when there is no problem; `patch` (JSONPatch operations) applies only then."""

    problems: tuple[Problem, ...] = ()
    patch: tuple[dict[str, Any], ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.problems


def field(*loc: str | int) -> str:
    """`spec`, `tasks`, 1, `minAvailable` -> `spec.tasks[1].minAvailable`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def pointer(*loc: str | int) -> str:
    """The JSON Pointer (RFC 6901) of a field, for a JSONPatch `path`."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in loc)


def add(loc: Loc, value: Any) -> dict[str, Any]:
    """A JSONPatch `add` of `value` at the field `loc` (set, or insert at a list index)."""
    return {"op": "add", "path": pointer(*loc), "value": value}


def shown(value: Any) -> str:
    """A value as a message quotes it, clipped to `CLIP` characters."""
    return _clip(repr(value) if isinstance(value, str) else _short(value), CLIP)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return f"an object of {_count(len(value), 'field')}"
    if isinstance(value, list):
        return f"a list of {_count(len(value), 'item')}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
        try:
            return f"a {len(str(abs(value)))}-digit number"
        except ValueError:  # str() refuses an int of over 4300 digits
            return f"a number of about {math.floor(math.log10(abs(value))) + 1} digits"
    return str(value)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def parse(
    model: type[M],
    obj: Mapping[str, Any] | None,
    kind: str,
    keys: Sequence[str] = ("metadata", "spec"),
) -> tuple[M | None, list[Problem]]:
    """`keys` of the object read strictly into `model` (a string where a number belongs is a
    problem, not a conversion), or the problems that keep it from being read."""
    if not isinstance(obj, Mapping):
        return None, [Problem("", f"the request carries no {kind} object")]
    body = {key: obj[key] for key in keys if key in obj}
    try:
        return model.model_validate(body, strict=True), []
    except ValidationError as error:
        return None, from_validation(error)


def from_validation(error: ValidationError, *prefix: str | int) -> list[Problem]:
    """pydantic's errors as problems: the wrong type or value, at the field it was found."""
    problems = []
    for item in error.errors(include_url=False):
        loc = [*prefix, *item["loc"]]  # Lahar's models have no unions that would add a branch
        reason = item["msg"]
        if item["type"] == "value_error":
            # Our own validator's words (`cpu: invalid quantity '1x'`), which quote the value.
            reason = _clip(str(item.get("ctx", {}).get("error", reason)), LONGEST)
        elif item["type"] not in ("missing", "extra_forbidden"):
            reason = f"{reason}, got {shown(item.get('input'))}"
        problems.append(Problem(field(*loc), reason))
    return _unique(problems)


def _unique(problems: Iterable[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))


def in_field_order(problem: Problem) -> tuple[Any, ...]:
    """Sort key: by path, indexes as numbers (`tasks[2]` before `tasks[10]`), so a denial lists
    its problems in the order a reader meets the fields."""
    parts = re.split(r"(\d+)", problem.path)
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts))


def denial_message(what: str, problems: Sequence[Problem]) -> str:
    """One message for a denial: `<what> is invalid: <path>: <reason>; ...` with every problem (up
    to `SHOWN`, then how many more)."""
    listed = "; ".join(_clip(str(p), LONGEST) for p in problems[:SHOWN])
    more = len(problems) - SHOWN
    if more > 0:
        listed += f"; and {more} more"
    return f"{what} is invalid: {listed}"


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one (a raw object's field of the wrong type)."""
    return value if isinstance(value, Mapping) else {}


def amounts(spec: Mapping[str, Any], *path: str) -> dict[str, tuple[Decimal, Any]]:
    """A level's exact amounts (the model's are rounded to the scheduler's units), each with the
    quantity as written; the model has read them, so each parses."""
    listed: Any = spec
    for key in path:
        listed = mapping(listed).get(key)
    return {name: (parse_quantity(q), q) for name, q in mapping(listed).items()}


def by_value(spec: Mapping[str, Any], *path: str) -> Any:
    """A level's amounts by value (`1` and `1000m` alike), or as written if one does not parse
    (an old object stored before the rules)."""
    try:
        return {name: amount for name, (amount, _) in amounts(spec, *path).items()}
    except ValueError:
        listed: Any = spec
        for key in path:
            listed = mapping(listed).get(key)
        return listed
