"""Keeping Python's cyclic garbage collector out of the way of a simulation and of a snapshot.

A run, and the taking of a snapshot of a large cluster, allocate millions of values (decoded
lists, models, resource vectors, turns, views) that form no cycles. Python's defaults make the
collector look at young objects every 700 allocations and, as the heap grows, walk every object
alive again and again: a third of the time a what-if at 1,000 nodes took went there
(docs/performance.md). `young_collections_every` runs a block with the young objects looked at
once per that many allocations instead, then puts the thresholds back; `frozen` moves every
object alive when the block begins (the snapshot, its trace, the policy) out of the collector's
sight for the block (`gc.freeze`), so the collections a run makes walk only what the run made,
and hands them back after (`gc.unfreeze`: the process may be a long one, the tests'). Neither
changes what is decided, only when the collector runs.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG = 100_000  # allocations between looks at young objects (10-20% faster at 4,000 jobs)


@contextlib.contextmanager
def young_collections_every(allocations: int = YOUNG) -> Iterator[None]:
    """Run with the collector looking at young objects once per `allocations` (net)
    allocations instead of Python's 700, then as before."""
    before = gc.get_threshold()
    gc.set_threshold(allocations, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """Run with every object alive now out of the collector's sight, then back in it."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
