"""The turns a walk of the fair order was taken to (`gangs.order`), kept for its readers.

A `Turn` says what the walk decided for one gang: its slots, or why it waits (and, for a starving
gang, the nodes it drains toward). Past the point where nothing in line fits, the walk gives
refusals that change nothing as `Run`s, stretches of a queue's line as the walk holds it (a
`QueueLine`, which nothing changes once a walk holds it), and `Turns` makes their turns only when
someone reads them, each by its run's `Refusals` (the walk's, which knows the room they were
refused on); what is in a run is found by bisecting its line. Pure.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import ItemsView, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from extender.api.resources import Resources
from extender.gangs.lineup import QueueLine
from extender.gangs.placement import Slot
from extender.gangs.refusals import Rejection


@dataclass(slots=True)  # (not frozen: a walk makes thousands, and frozen ones cost twice)
class Turn:
    key: str
    slots: dict[str, Slot] = field(default_factory=dict)  # it fits: admit it with these
    rejection: Rejection | None = None
    targets: dict[str, Resources] = field(default_factory=dict)  # starving: what it drains toward


class Refusals(Protocol):
    """What makes the turns of a run's gangs when they are read (the walk, `gangs.order`)."""

    def refusal(self, key: str) -> Turn: ...


@dataclass(frozen=True, slots=True)
class Run:
    """Refusals past the point where nothing fits that change nothing, as a stretch of a queue's
    line: its entries from position `start` up to `end`, in order, whose turns `refusals`
    makes."""

    line: QueueLine
    start: int
    end: int
    refusals: Refusals

    def __len__(self) -> int:
        return self.end - self.start

    def __iter__(self) -> Iterator[str]:
        """The gangs' keys, in order."""
        return (key for _, key in islice(self.line.ranked, self.start, self.end))

    @property
    def last(self) -> str:
        return self.line.ranked[self.end - 1][1]

    def position(self, key: str) -> int | None:
        """Where gang `key` is in the line, if within the run."""
        entry = self.line.entries.get(key)
        if entry is None:
            return None
        ranked = self.line.ranked
        at = bisect_left(ranked, (entry[0], key), self.start, self.end)
        return at if at < self.end and ranked[at][1] == key else None

    def split(self, at: int) -> tuple[Run, Run]:
        """The run up to position `at`, and the rest from there."""
        return Run(self.line, self.start, at, self.refusals), Run(
            self.line, at, self.end, self.refusals
        )


class Turns(Mapping[str, Turn]):
    """The turns a walk was taken to, in its order (`add`, `add_run`, as the walk takes them); a
    refusal in a run is made when first read, by the run's `refusals`, and kept."""

    def __init__(self) -> None:
        self._turns: dict[str, Turn] = {}  # taken, or made when read
        self._taken: list[str | Run] = []  # in the walk's order
        self._runs: list[Run] = []
        self._count = 0

    def add(self, turn: Turn) -> None:
        """The walk reached gang `turn.key`: its turn."""
        self._turns[turn.key] = turn
        self._taken.append(turn.key)
        self._count += 1

    def add_run(self, run: Run) -> None:
        """The walk reached the gangs of `run`."""
        self._taken.append(run)
        self._runs.append(run)
        self._count += len(run)

    @property
    def ran(self) -> bool:
        """Whether the walk reached the point past which nothing fits (it gave a run)."""
        return bool(self._runs)

    def _run_of(self, key: str) -> Run | None:
        for run in self._runs:
            if run.position(key) is not None:
                return run
        return None

    def __getitem__(self, key: str) -> Turn:
        turn = self._turns.get(key)
        if turn is not None:
            return turn
        run = self._run_of(key)
        if run is None:
            raise KeyError(key)
        return self._made(key, run)

    def _made(self, key: str, run: Run) -> Turn:
        """The turn of gang `key`, in `run`: made once, when first read."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = run.refusals.refusal(key)
        return turn

    def __contains__(self, key: object) -> bool:
        return key in self._turns or (isinstance(key, str) and self._run_of(key) is not None)

    def items(self) -> ItemsView[str, Turn]:
        return _Items(self)

    def given(self) -> Iterator[tuple[str, Turn]]:
        """The turns the walk gave one by one, in order: all but the runs' refusals (which
        admit nothing, so a reader looking for gangs let in skips them unmade)."""
        for item in self._taken:
            if not isinstance(item, Run):
                yield item, self._turns[item]

    def _each(self) -> Iterator[tuple[str, Turn]]:
        """Every key with its turn, in order (the keys come from the walk: no lookup needed)."""
        for item in self._taken:
            if isinstance(item, Run):
                for key in item:
                    yield key, self._made(key, item)
            else:
                yield item, self._turns[item]

    def __iter__(self) -> Iterator[str]:
        for item in self._taken:
            if isinstance(item, Run):
                yield from item
            else:
                yield item

    def __len__(self) -> int:
        return self._count


class _Items(ItemsView[str, Turn]):
    """`Turns.items()`: read in order without looking each key up (a preemption pass reads the
    turn of every gang in line)."""

    _mapping: Turns

    def __iter__(self) -> Iterator[tuple[str, Turn]]:
        return self._mapping._each()
