"""Lahar's generated CRDs hold every field of Volcano's, with a compatible type: the listing
`tests/data/volcano-crd-fields.txt` (made from Volcano's CRDs by `tests/data/volcano_fields.py`,
its header names the commit) against the schemas the models make. A field Volcano adds shows up
here, by path, once the listing is made again from a newer Volcano."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.api.crds import DEFINITIONS, custom_resource_definition
from tests.data.volcano_fields import crd_fields, read_listing

LISTING = Path(__file__).resolve().parents[2] / "data" / "volcano-crd-fields.txt"
VOLCANO = read_listing(LISTING.read_text())
LAHAR = {d.name: crd_fields(custom_resource_definition(d)) for d in DEFINITIONS}


def compatible(volcano: str, lahar: str) -> bool:
    """The same schema type, and the same format where Volcano gives one (a Go `int` has none;
    Lahar may say int32 or nothing)."""
    kind, _, width = volcano.partition("/")
    lahar_kind, _, lahar_width = lahar.partition("/")
    return kind == lahar_kind and (not width or width == lahar_width)


def test_the_listing_covers_the_four_crds() -> None:
    assert sorted(VOLCANO) == sorted(LAHAR)
    assert "spec.tasks[].partitionPolicy.totalPartitions" in VOLCANO["jobs.batch.volcano.sh"]


@pytest.mark.parametrize("crd", sorted(VOLCANO))
def test_every_volcano_field_is_in_lahars_crd(crd: str) -> None:
    missing = sorted(set(VOLCANO[crd]) - set(LAHAR[crd]))
    assert not missing, f"{crd}: Lahar's models lack {', '.join(missing)}"


@pytest.mark.parametrize("crd", sorted(VOLCANO))
def test_every_volcano_field_has_a_compatible_type(crd: str) -> None:
    ours = LAHAR[crd]
    differ = [
        f"{path}: Volcano {kind}, Lahar {ours[path]}"
        for path, kind in VOLCANO[crd].items()
        if path in ours and not compatible(kind, ours[path])
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
