"""Go durations as Volcano's annotations write them."""

from __future__ import annotations

import pytest

from extender.api.duration import duration_or_none, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("250ms", 0.25),
        ("1h2m3s4ms5us6ns", 3723.004005006),
        ("1µs", 1e-6),
        ("0", 0.0),
        ("-2m", -120.0),
        ("+.5s", 0.5),
    ],
)
def test_valid(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "10", "m", "1d", "1h 2m", "s10", "1.2.3s", "ten minutes", "-"]
)
def test_invalid_says_why(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["1" * 50_000 + "x", "1." + "1" * 50_000, "1s" * 40])
def test_long_hostile_text_is_refused_quickly(text: str) -> None:
    # The webhook parses durations users send: a long digit run once backtracked quadratically.
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("1h30m", 5400.0),
        ("0", 0.0),
        ("", None),
        (None, None),
        ("bogus", None),
        ("10", None),
    ],
)
def test_duration_or_none_is_none_when_absent_or_unreadable(
    text: str | None, seconds: float | None
) -> None:
    assert duration_or_none(text) == (None if seconds is None else pytest.approx(seconds))
