"""Waiting on a condition instead of sleeping a fixed time.

`wait_until` polls a check with a short, growing interval and returns the first truthy value it
gives; on timeout it raises `TimeoutError` naming what was awaited and the last thing seen, so a
failing test or a stuck dev cluster says what it was waiting for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    check: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    describe: Callable[[], str] | None = None,
    interval: float = 0.05,
    max_interval: float = 0.5,
) -> T:
    """Call `check` until it returns something truthy; return that value.

    `describe`, when given, is called on timeout to say what the state was (for the error).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        now = time.monotonic()
        if now >= deadline:
            seen = f"; last seen: {describe()}" if describe else ""
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}{seen}")
        time.sleep(min(interval, deadline - now))
        interval = min(interval * 1.5, max_interval)
