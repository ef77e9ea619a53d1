"""Waiting on a condition returns its first truthy value or says what it waited for."""

from __future__ import annotations

import itertools

import pytest

from extender.kube import wait_until


def test_returns_the_first_truthy_value() -> None:
    counter = itertools.count()
    assert wait_until(lambda: next(counter) >= 3 and "done", timeout=5, what="x") == "done"


def test_timeout_names_what_was_awaited_and_what_was_seen() -> None:
    with pytest.raises(TimeoutError, match=r"after 0\.2s waiting for the moon; last seen: cheese"):
        wait_until(lambda: None, timeout=0.2, what="the moon", describe=lambda: "cheese")
