"""How long the what-if simulator takes on synthetic traces of growing size.

    .venv/bin/python benchmarks/simulate.py [--sizes 1000/100 2000/200 10000/1000]
                                            [--policy lahar stock] [--load 1.5] [--seed 0]
                                            [--timeout 600] [--profile FILE] [--repeat 1]

For each size JOBS/NODES the synthetic multi-queue trace `extender.simulate.synthetic.generate
(JOBS, NODES, load=LOAD)` (offered work over capacity, 1.5 by default: a backlog builds up) is
played against each chosen policy, the way `lahar simulate` plays it (`lahar`: policy/lahar.yaml,
the default policy; `stock`: the stock scheduler's way). Printed per run: wall
seconds (and cpu seconds, steadier on a busy machine), jobs simulated, scheduling attempts,
simulated jobs per wall second, the summary row `lahar simulate` prints (makespan, waits,
utilisation, held, fairness, partial gangs, preemptions) without its TOOK column, and a digest
of every job's arrival, start, finish and restarts and every pod interval, so runs of two
versions of the code can be compared for identical outcomes. Each run is stopped after --timeout
wall seconds (SIGALRM), and sizes above --max-jobs are refused, so a slow version cannot run
forever. --profile writes a cProfile dump of the last run. --repeat N plays each size and policy N
times and prints the least, median and most wall seconds: on this machine two runs of the same
code started together on its two cores differ by up to a tenth, and once by two fifths (where
garbage collection took 0.2 s of 34 s), so versions are compared by the least of several runs.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import logging
import signal
import statistics
import sys
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.cli.kubectl import table
from extender.cli.serve_cmd import default_policy
from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate.defaults import STOCK, stock_policy
from extender.simulate.report import HEADERS, row
from extender.simulate.run import SimulationOutcome, simulate
from extender.simulate.summary import summarize
from extender.simulate.synthetic import LOAD, generate
from extender.simulate.trace import Trace, parse_trace


class TimedOut(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise TimedOut


def policy_named(name: str) -> Policy:
    if name == STOCK:
        return stock_policy()
    if name == "lahar":
        return load_policy(default_policy(), REGISTRY)
    return load_policy(Path(name), REGISTRY)


def digest(outcome: SimulationOutcome) -> str:
    """A fingerprint of what happened: equal digests, identical decisions' outcomes."""
    sha = hashlib.sha256()
    for name, r in sorted(outcome.jobs.items()):
        sha.update(f"{name} {r.arrived} {r.started} {r.finished} {r.restarts}\n".encode())
    for i in outcome.intervals:
        line = f"{i.node} {i.job} {i.incarnation} {i.cpu} {i.start} {i.end} {i.useful_from}"
        sha.update(f"{line} {i.evicted}\n".encode())
    sha.update(f"{outcome.preemptions} {outcome.end} {outcome.attempts}".encode())
    return sha.hexdigest()[:16]


def _run(
    trace: Trace, policy: Policy, name: str, args: argparse.Namespace
) -> tuple[SimulationOutcome, float, float] | None:
    """One simulation: its outcome, wall and cpu seconds (None: stopped at --timeout)."""
    profiler = cProfile.Profile() if args.profile else None
    started, cpu = time.perf_counter(), time.process_time()
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    try:
        if profiler is not None:
            profiler.enable()
        outcome = simulate(trace, policy, Path(name).stem, seed=args.seed)
    except TimedOut:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
    return outcome, time.perf_counter() - started, time.process_time() - cpu


def size(text: str) -> tuple[int, int]:
    jobs, _, nodes = text.partition("/")
    return int(jobs), int(nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=size, nargs="*", default=[(1000, 100), (2000, 200)])
    parser.add_argument("--policy", nargs="*", default=["lahar"], help="lahar, stock or a file")
    parser.add_argument(
        "--load", type=float, default=LOAD, help="the trace's offered work / capacity"
    )
    parser.add_argument("--seed", type=int, default=0, help="the scheduler's tie-break seed")
    parser.add_argument("--timeout", type=float, default=600.0, help="wall seconds per run")
    parser.add_argument("--max-jobs", type=int, default=20000, help="refuse larger traces")
    parser.add_argument("--profile", type=Path, help="write a cProfile dump of the last run")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per size and policy (the spread is printed)"
    )
    args = parser.parse_args()
    logging.getLogger("extender").setLevel(logging.WARNING)  # as lahar simulate without -v
    signal.signal(signal.SIGALRM, _alarm)
    rows: list[tuple[str, ...]] = []
    for jobs, nodes in args.sizes:
        if jobs > args.max_jobs:
            raise SystemExit(f"{jobs} jobs is above --max-jobs {args.max_jobs}")
        trace = parse_trace(generate(jobs, nodes, load=args.load))
        for name in args.policy:
            policy = policy_named(name)
            walls: list[float] = []
            digests: set[str] = set()
            outcome = None
            for _ in range(args.repeat):
                run = _run(trace, policy, name, args)
                if run is None:
                    print(f"{jobs}/{nodes} {name}: stopped after {args.timeout:.0f} s", flush=True)
                    break
                outcome, wall, cpu = run
                walls.append(wall)
                digests.add(fingerprint := digest(outcome))
                print(
                    f"{jobs}/{nodes} {name}: {wall:.1f} s wall ({cpu:.1f} s cpu), "
                    f"{len(outcome.jobs)} jobs, "
                    f"{outcome.attempts} attempts, {len(outcome.jobs) / wall:.0f} jobs/s, "
                    f"digest {fingerprint}",
                    flush=True,
                )
            if len(walls) > 1:
                print(
                    f"{jobs}/{nodes} {name}: {len(walls)} runs, wall min {min(walls):.1f} s, "
                    f"median {statistics.median(walls):.1f} s, max {max(walls):.1f} s",
                    flush=True,
                )
            if len(digests) > 1:  # the simulation is deterministic: this is a bug to report
                raise SystemExit(f"{jobs}/{nodes} {name}: runs differ: digests {sorted(digests)}")
            if outcome is not None:
                rows.append((f"{jobs}/{nodes}", *row(summarize(outcome))[:-1]))
    print()
    print(table(("SIZE", *HEADERS[:-1]), rows))


if __name__ == "__main__":
    main()
