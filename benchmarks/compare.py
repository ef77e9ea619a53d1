"""Which of two versions of the code simulates faster, told apart from this machine's noise.

    .venv/bin/python benchmarks/compare.py OLD NEW [--sizes 2000/200] [--rounds 4] [--load 1.5]

OLD and NEW are git revisions (`.` is the working tree as it is). Each is checked out into a
temporary worktree, and each size is played by both at once with that tree's own
`benchmarks/simulate.py`, each process pinned to one core, the cores swapped every round: on a
machine whose speed moves by half from hour to hour and differs between its cores, a pair run
together on swapped cores is the comparison that holds (a run alone an hour later does not).
Printed per round: both wall seconds and NEW/OLD; then per size the median ratio and the least
of each. The two must make the same decisions (the same digest), or the comparison stops: two
versions that decide differently are compared on outcomes first. With one core the two run one
after the other, in turn first.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^(?P<size>\S+) \S+: (?P<wall>[\d.]+) s wall .* digest (?P<digest>\w+)$")


@dataclass(frozen=True)
class Run:
    wall: float
    digest: str


@contextmanager
def tree(revision: str) -> Iterator[Path]:
    """The code at `revision` (`.`: the working tree itself), in a worktree removed afterwards."""
    if revision == ".":
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="lahar-compare-") as parent:
        path = Path(parent) / "tree"
        git = ["git", "-C", str(ROOT)]
        command = [*git, "worktree", "add", "--detach", "-q", str(path), revision]
        added = subprocess.run(command, check=False)
        if added.returncode != 0:  # (git said why, e.g. "invalid reference")
            raise SystemExit(f"{revision}: cannot check it out into a worktree")
        try:
            yield path
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(path)], check=True)


def start(path: Path, size: str, load: float, core: int | None) -> subprocess.Popen[str]:
    """`path`'s simulator benchmark on one size, pinned to `core` (None: unpinned) as soon as
    it starts (it spends its first second importing and building the trace)."""
    command = [sys.executable, "benchmarks/simulate.py", "--sizes", size, "--load", str(load)]
    process = subprocess.Popen(command, cwd=path, stdout=subprocess.PIPE, text=True)
    if core is not None:
        os.sched_setaffinity(process.pid, {core})
    return process


def finish(process: subprocess.Popen[str], which: str) -> Run:
    out, _ = process.communicate()
    for line in out.splitlines():
        found = LINE.match(line)
        if found:
            return Run(float(found["wall"]), found["digest"])
    raise SystemExit(f"{which}: no timing line in the benchmark's output:\n{out}")


def round_of(
    trees: tuple[Path, Path], size: str, load: float, swapped: bool, cores: list[int]
) -> tuple[Run, Run]:
    """One run of each version, OLD then NEW: together, each pinned to a core (OLD to the first
    unless `swapped`), or with one core one after the other (OLD first unless `swapped`)."""
    names = ("OLD", "NEW")
    order = (1, 0) if swapped else (0, 1)
    runs: dict[int, Run] = {}
    if len(cores) >= 2:
        pinned = zip(order, cores, strict=True)
        started = {i: start(trees[i], size, load, core) for i, core in pinned}
        runs = {i: finish(process, names[i]) for i, process in started.items()}
    else:
        for i in order:
            runs[i] = finish(start(trees[i], size, load, None), names[i])
    return runs[0], runs[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("old", help="git revision, or . for the working tree")
    parser.add_argument("new", help="git revision, or . for the working tree")
    parser.add_argument("--sizes", nargs="*", default=["2000/200"], help="JOBS/NODES")
    parser.add_argument("--rounds", type=int, default=4, help="pairs per size (cores swapped)")
    parser.add_argument("--load", type=float, default=1.5, help="the trace's offered load")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    cores = sorted(os.sched_getaffinity(0))[:2]
    with ExitStack() as stack:
        trees = (stack.enter_context(tree(args.old)), stack.enter_context(tree(args.new)))
        print(f"OLD {args.old}, NEW {args.new}, cores {cores}, load {args.load}", flush=True)
        for size in args.sizes:
            ratios: list[float] = []
            olds: list[float] = []
            news: list[float] = []
            for number in range(args.rounds):
                old, new = round_of(trees, size, args.load, number % 2 == 1, cores)
                if old.digest != new.digest:
                    raise SystemExit(
                        f"{size}: the versions decide differently (digests {old.digest} and "
                        f"{new.digest}): compare their outcomes, not their speed"
                    )
                olds.append(old.wall)
                news.append(new.wall)
                ratios.append(new.wall / old.wall)
                print(
                    f"{size} round {number + 1}: OLD {old.wall:.1f} s, NEW {new.wall:.1f} s, "
                    f"NEW/OLD {ratios[-1]:.3f}",
                    flush=True,
                )
            print(
                f"{size}: NEW/OLD median {statistics.median(ratios):.3f} "
                f"(from {min(ratios):.3f} to {max(ratios):.3f}); least OLD {min(olds):.1f} s, "
                f"least NEW {min(news):.1f} s; digest {old.digest}",
                flush=True,
            )


if __name__ == "__main__":
    main()
