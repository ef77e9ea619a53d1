"""The collector's settings a run and a snapshot take are put back after, however they end."""

from __future__ import annotations

import gc
from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest

from extender.simulate.collector import YOUNG, frozen, young_collections_every


class _Stop(Exception):
    pass


def _inside(block: AbstractContextManager[None], seen: Callable[[], None]) -> None:
    with block:
        seen()
        raise _Stop


def test_young_collections_are_fewer_in_the_block_and_as_before_after_it() -> None:
    before = gc.get_threshold()
    inside: list[tuple[int, ...]] = []
    with pytest.raises(_Stop):
        _inside(young_collections_every(), lambda: inside.append(gc.get_threshold()))
    assert inside == [(YOUNG, *before[1:])]
    assert gc.get_threshold() == before


def test_what_is_alive_is_out_of_the_collectors_sight_in_the_block_only() -> None:
    alive = [[index] for index in range(10)]  # (lists: objects the collector tracks)
    counts: list[int] = []
    with pytest.raises(_Stop):
        _inside(frozen(), lambda: counts.append(gc.get_freeze_count()))
    assert counts[0] >= len(alive)
    assert gc.get_freeze_count() == 0
