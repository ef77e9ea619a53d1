"""`lahar controller --scheduler-name`: the names in the order given, the defaults without one, and
a name that cannot be a schedulerName refused naming the flag."""

from __future__ import annotations

import pytest

from extender.cli.flags import scheduler_names
from extender.cli.main import build_parser


def names_of(given: list[str] | None) -> tuple[str, ...]:
    flags = [f"--scheduler-name={name}" for name in given or []]
    return scheduler_names(build_parser().parse_args(["controller", *flags]), "controller")


@pytest.mark.parametrize(
    ("given", "names"),
    [
        (None, ("lahar", "volcano")),
        (["volcano"], ("volcano",)),
        (["gpu", "lahar", "gpu"], ("gpu", "lahar")),
    ],
    ids=["the defaults: Lahar's two profiles", "one name", "in order, repeats dropped"],
)
def test_scheduler_names(given: list[str] | None, names: tuple[str, ...]) -> None:
    assert names_of(given) == names


def test_a_name_that_is_no_scheduler_name_is_refused() -> None:
    with pytest.raises(SystemExit, match="lahar controller: --scheduler-name 'Lahar'"):
        names_of(["Lahar"])
