"""`lahar controller --scheduler-name`: the names in the order given, the defaults without one, and
a name that cannot be a schedulerName refused naming the flag."""

from __future__ import annotations

import pytest

from extender.cli.controller_cmd import scheduler_names


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
    assert scheduler_names(given) == names


def test_a_name_that_is_no_scheduler_name_is_refused() -> None:
    with pytest.raises(SystemExit, match="--scheduler-name 'Lahar'"):
        scheduler_names(["Lahar"])
