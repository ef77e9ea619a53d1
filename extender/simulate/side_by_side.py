"""Several policies played on one trace side by side: a process per policy, as many at once as
the machine gives this process cores.

Each simulation is single-threaded and shares nothing with the others (its own cluster state,
virtual clock and seeded tie-breaks), so playing them in worker processes gives the outcomes
played one after another, in about the wall time of the longest instead of the sum (`lahar
simulate` compares Lahar's policy with the stock scheduler's by default). The trace and the
policies go to the workers pickled and the outcomes come back the same way, in the policies'
order; a worker's error is raised here, and a worker that dies (killed, out of memory) is
`WorkerDied`, naming the policies whose runs it stopped. Progress reports come back through a
queue and are handed to `on_progress` in this process as they arrive. One policy, or one core:
played here, in turn. `modes` gives a run, by its name, the scale-up mode its queues carry (on a
trace with an autoscaled pool, Lahar's policy is played once per mode), and `traces` its own
trace (a what-if of a queue's weight plays the edited snapshot beside the one as it is).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from extender.api.scale_up import Mode
from extender.framework.policy import Policy
from extender.simulate.run import Progress, SimulationOutcome, simulate
from extender.simulate.trace import Trace

_worker: dict[str, Any] = {}  # in a worker process: "reports", the queue its progress goes to


class WorkerDied(Exception):
    """The process playing a policy ended before its simulation did."""


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


def play(
    trace: Trace,
    policies: Sequence[tuple[str, Policy]],
    *,
    seed: int = 0,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: float = 2.0,
    workers: int | None = None,
    modes: Mapping[str, Mode] | None = None,
    traces: Mapping[str, Trace] | None = None,
    horizon: float | None = None,
) -> list[SimulationOutcome]:
    """`simulate` for each (name, policy), up to `workers` (default: `cores()`) at once; a run
    `traces` names plays its own trace instead of `trace` (a queue edited, say); every run stops
    at `horizon` when given."""
    at_once = min(len(policies), workers if workers is not None else cores())
    modes, traces = modes or {}, traces or {}
    if at_once <= 1:
        return [
            simulate(
                traces.get(name, trace),
                policy,
                name,
                seed=seed,
                on_progress=on_progress,
                progress_every=progress_every,
                scale_up=modes.get(name),
                horizon=horizon,
            )
            for name, policy in policies
        ]
    context = multiprocessing.get_context()
    reports = context.Queue() if on_progress is not None else None
    with ProcessPoolExecutor(
        at_once, mp_context=context, initializer=_serve, initargs=(reports,)
    ) as pool:
        runs = [
            pool.submit(
                _run,
                traces.get(name, trace),
                policy,
                name,
                seed,
                progress_every,
                mode=modes.get(name),
                horizon=horizon,
            )
            for name, policy in policies
        ]
        if on_progress is None:
            wait(runs)
        else:
            _relay(runs, reports, on_progress)
        broken = [
            name
            for run, (name, _) in zip(runs, policies, strict=True)
            if isinstance(run.exception(), BrokenProcessPool)
        ]
        if broken:  # (one worker dying stops the others: which one died is not known)
            raise WorkerDied(
                "a worker process ended abruptly (killed, or out of memory?) while playing "
                f"policies {', '.join(broken)}"
            )
        return [run.result() for run in runs]


def _relay(
    runs: list[Future[SimulationOutcome]], reports: Any, on_progress: Callable[[Progress], None]
) -> None:
    """Hand the workers' progress reports on until every run is over, then those left in the
    queue (a run's last report, where it ended)."""
    while not all(run.done() for run in runs):
        with contextlib.suppress(queue.Empty):
            on_progress(reports.get(timeout=0.2))
    while True:
        try:
            on_progress(reports.get_nowait())
        except queue.Empty:
            return


def _serve(reports: Any) -> None:
    """A worker process starts: where its progress reports go (None: nowhere)."""
    _worker["reports"] = reports


def _run(
    trace: Trace,
    policy: Policy,
    name: str,
    seed: int,
    every: float,
    *,
    mode: Mode | None,
    horizon: float | None,
) -> SimulationOutcome:
    """One simulation in a worker process."""
    reports = _worker.get("reports")
    shown = reports.put if reports is not None else None
    return simulate(
        trace,
        policy,
        name,
        seed=seed,
        on_progress=shown,
        progress_every=every,
        scale_up=mode,
        horizon=horizon,
    )
