"""Lahar's generated CRDs hold every field of Volcano's, with a compatible type and no limit
Volcano does not have (so the API server stores every object Volcano's would): the listing
`tests/data/volcano-crd-fields.txt` (made from Volcano's CRDs by `tests/data/volcano_fields.py`,
its header names the commit) against the schemas the models make. A field Volcano adds shows up
here, by path, once the listing is made again from a newer Volcano."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.api.crds import DEFINITIONS, custom_resource_definition
from tests.data.volcano_fields import Field, crd_fields, read_listing

LISTING = Path(__file__).resolve().parents[2] / "data" / "volcano-crd-fields.txt"
VOLCANO = read_listing(LISTING.read_text())
LAHAR = {d.name: crd_fields(custom_resource_definition(d)) for d in DEFINITIONS}


def compatible(volcano: str, lahar: str) -> bool:
    """The same schema type, and the same format where Volcano gives one (a Go `int` has none;
    Lahar may say int32 or nothing)."""
    kind, _, width = volcano.partition("/")
    lahar_kind, _, lahar_width = lahar.partition("/")
    return kind == lahar_kind and (not width or width == lahar_width)


def test_the_listing_covers_the_five_crds() -> None:
    assert sorted(VOLCANO) == sorted(LAHAR)
    assert "spec.tasks[].partitionPolicy.totalPartitions" in VOLCANO["jobs.batch.volcano.sh"]
    assert "spec.members[].selector.regexMatch.pattern" in VOLCANO["hypernodes.topology.volcano.sh"]


def test_lahars_hypernode_crd_checks_what_volcanos_does() -> None:
    """Volcano's HyperNode CRD refuses what its webhook would (one selector per member, a valid
    exact name, a non-empty pattern, at least one member): Lahar's holds every such limit too, so
    an object one CRD refuses the other refuses."""
    crd = "hypernodes.topology.volcano.sh"
    ours = LAHAR[crd]
    differ = [
        f"{path}: Volcano {sorted(field.limits)}, Lahar {sorted(ours[path].limits)}"
        for path, field in VOLCANO[crd].items()
        if path.startswith("spec") and path in ours and field.limits != ours[path].limits
    ]
    assert not differ, "; ".join(differ)


@pytest.mark.parametrize("crd", sorted(VOLCANO))
def test_every_volcano_field_is_in_lahars_crd(crd: str) -> None:
    missing = sorted(set(VOLCANO[crd]) - set(LAHAR[crd]))
    assert not missing, f"{crd}: Lahar's models lack {', '.join(missing)}"


@pytest.mark.parametrize("crd", sorted(VOLCANO))
def test_every_volcano_field_has_a_compatible_type(crd: str) -> None:
    ours = LAHAR[crd]
    differ = [
        f"{path}: Volcano {field.kind}, Lahar {ours[path].kind}"
        for path, field in VOLCANO[crd].items()
        for kind in [field.kind]
        if path in ours and not compatible(kind, ours[path].kind)
    ]
    assert not differ, f"{crd}: " + "; ".join(differ)


@pytest.mark.parametrize(
    ("volcano", "lahar", "expected"),
    [
        ("integer/int32", "integer/int32", True),
        ("integer", "integer/int32", True),
        ("integer/int32", "integer", False),
        ("integer/int32", "integer/int64", False),
        ("string", "integer", False),
        ("int-or-string", "int-or-string", True),
    ],
)
def test_compatible(volcano: str, lahar: str, expected: bool) -> None:
    assert compatible(volcano, lahar) is expected


def _limits(field: Field) -> dict[str, str]:
    return dict(limit.partition("=")[::2] for limit in field.limits)


def stricter(volcano: Field, lahar: Field) -> list[str]:
    """The limits Lahar's schema puts on a value that Volcano's would store."""
    theirs, ours = _limits(volcano), _limits(lahar)
    found = []
    if "required" in ours and "required" not in theirs:
        found.append("required")
    if "enum" in ours and (
        "enum" not in theirs or not set(theirs["enum"].split("|")) <= set(ours["enum"].split("|"))
    ):
        found.append(f"enum={ours['enum']}")
    if "minimum" in ours and float(ours["minimum"]) > float(theirs.get("minimum", "-inf")):
        found.append(f"minimum={ours['minimum']}")
    for key in ("minLength", "minItems", "rules"):
        if key in ours and float(ours[key]) > float(theirs.get(key, "0")):
            found.append(f"{key}={ours[key]}")
    for key in ("maximum", "maxLength"):
        if key in ours and float(ours[key]) < float(theirs.get(key, "inf")):
            found.append(f"{key}={ours[key]}")
    if "pattern" in ours and ours["pattern"] != theirs.get("pattern"):
        found.append(f"pattern={ours['pattern']}")
    return found


# Limits kept on purpose where Volcano's CRD has none; each with its reason.
DELIBERATE = {
    # A negative count of a task's members means nothing; the API server refuses it at once
    # rather than the engine reading it as zero.
    ("podgroups.scheduling.volcano.sh", "spec.minTaskMember{}"): ["minimum=0"],
}


@pytest.mark.parametrize("crd", sorted(VOLCANO))
def test_no_field_is_stricter_than_volcanos(crd: str) -> None:
    ours = LAHAR[crd]
    differ = [
        f"{path}: {', '.join(found)}"
        for path, field in VOLCANO[crd].items()
        if path in ours
        and (found := stricter(field, ours[path]))
        and found != DELIBERATE.get((crd, path))
    ]
    assert not differ, f"{crd}: Lahar's CRD refuses what Volcano's stores: " + "; ".join(differ)


@pytest.mark.parametrize(
    ("volcano", "lahar", "expected"),
    [
        (set(), {"required"}, ["required"]),
        ({"required"}, {"required"}, []),
        (set(), {"enum=a|b"}, ["enum=a|b"]),
        ({"enum=a|b|c"}, {"enum=a|b"}, ["enum=a|b"]),
        ({"enum=a|b"}, {"enum=a|b|c"}, []),
        (set(), {"minimum=0"}, ["minimum=0"]),
        ({"minimum=1"}, {"minimum=0"}, []),
        ({"minimum=0"}, {"minimum=1"}, ["minimum=1"]),
        ({"maxLength=253"}, {"maxLength=63"}, ["maxLength=63"]),
        (set(), {"maxLength=63"}, ["maxLength=63"]),
        ({"maximum=10"}, set(), []),
        (set(), {"minLength=1"}, ["minLength=1"]),
        ({"minLength=1"}, {"minLength=1"}, []),
        ({"minItems=2"}, {"minItems=1"}, []),
        (set(), {"minItems=1"}, ["minItems=1"]),
        (set(), {"rules=2"}, ["rules=2"]),
        ({"rules=2"}, {"rules=2"}, []),
        ({"pattern=^a=b$"}, {"pattern=^a=b$"}, []),
        ({"pattern=^a$"}, {"pattern=^b$"}, ["pattern=^b$"]),
        (set(), {"pattern=^a$"}, ["pattern=^a$"]),
        ({"pattern=^a$"}, set(), []),
    ],
)
def test_stricter(volcano: set[str], lahar: set[str], expected: list[str]) -> None:
    assert stricter(Field("string", frozenset(volcano)), Field("string", frozenset(lahar))) == (
        expected
    )
