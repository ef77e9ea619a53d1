"""The turns a walk of the fair order was taken to (`gangs.order`), kept for its readers.

A `Turn` says what the walk decided for one gang: its slots, or why it waits (and, for a starving
gang, the nodes it drains toward). Past the point where nothing in line fits, the walk gives
refusals that change nothing as `Run`s, stretches of a queue's line in the lineup, and `Turns`
makes their turns only when someone reads them; what is in a run is found by bisecting the line,
which must not change while the turns are read (the walk's guard raises if it did). Pure.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, ItemsView, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice

from extender.api.resources import Resources
from extender.gangs.lineup import Entry, Line
from extender.gangs.placement import Slot
from extender.gangs.refusals import Rejection


@dataclass(slots=True)  # (not frozen: a walk makes thousands, and frozen ones cost twice)
class Turn:
    key: str
    slots: dict[str, Slot] = field(default_factory=dict)  # it fits: admit it with these
    rejection: Rejection | None = None
    targets: dict[str, Resources] = field(default_factory=dict)  # starving: what it drains toward


@dataclass(frozen=True, slots=True)
class Run:
    """Refusals past the point where nothing fits that change nothing, as a stretch of queue
    `queue`'s line: its entries from position `start` up to `end`, in order."""

    queue: str
    line: Line
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def __iter__(self) -> Iterator[str]:
        """The gangs' keys, in order."""
        return (key for _, key in islice(self.line, self.start, self.end))

    @property
    def last(self) -> str:
        return self.line[self.end - 1][1]

    def position(self, key: str, entries: Mapping[str, Entry]) -> int | None:
        """Where gang `key` (lined up as `entries` say) is in the line, if within the run."""
        entry = entries.get(key)
        if entry is None or entry[1].gang.queue != self.queue:
            return None
        at = bisect_left(self.line, (entry[0], key), self.start, self.end)
        return at if at < self.end and self.line[at][1] == key else None


class Turns(Mapping[str, Turn]):
    """The turns a walk was taken to, in its order; a refusal in a `Run` the walk gave is made
    when read, by `refusal`. What is in a run is found by position in the lineup's lines, whose
    entries `entries` gives while they have not changed."""

    def __init__(
        self, refusal: Callable[[str], Turn], entries: Callable[[], Mapping[str, Entry]]
    ) -> None:
        self._turns: dict[str, Turn] = {}  # taken, or made when read
        self._taken: list[str | Run] = []  # in the walk's order
        self._runs: list[Run] = []
        self._count = 0
        self._refusal, self._entries = refusal, entries
        self.pending: Run | None = None  # of a run the walk gave, the part not taken yet

    def add(self, key: str, turn: Turn) -> None:
        """The walk reached gang `key`: its turn."""
        self._turns[key] = turn
        self._taken.append(key)
        self._count += 1

    def add_run(self, run: Run, until: str | None = None) -> Run:
        """The walk reached these gangs: all of them, or as far as `until` when it is among
        them (the rest wait, `pending`). The part added."""
        at = run.position(until, self._entries()) if until is not None else None
        self.pending = None
        if at is not None and at + 1 < run.end:
            self.pending = Run(run.queue, run.line, at + 1, run.end)
            run = Run(run.queue, run.line, run.start, at + 1)
        self._taken.append(run)
        self._runs.append(run)
        self._count += len(run)
        return run

    @property
    def ran(self) -> bool:
        """Whether the walk reached the point past which nothing fits (it gave a run)."""
        return bool(self._runs)

    def _in_run(self, key: str) -> bool:
        if not self._runs:
            return False
        entries = self._entries()
        return any(run.position(key, entries) is not None for run in self._runs)

    def __getitem__(self, key: str) -> Turn:
        if key not in self._turns and not self._in_run(key):
            raise KeyError(key)
        return self._made(key)

    def _made(self, key: str) -> Turn:
        """The turn of gang `key`, which the walk reached: a run's refusal made once, when
        first read."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = self._refusal(key)
        return turn

    def __contains__(self, key: object) -> bool:
        return key in self._turns or (isinstance(key, str) and self._in_run(key))

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
        for key in self:
            yield key, self._made(key)

    def __iter__(self) -> Iterator[str]:
        for item in self._taken:
            if isinstance(item, Run):
                self._entries()  # (the lines it reads have not changed)
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
