"""Starting and stopping the dev cluster's child processes by pid, safely.

Each component runs in its own session (so a Ctrl-C in the terminal that started it does not reach
it) with its output in a log file. A process is known by its pid and its start time (from
/proc/PID/stat, fixed at fork and unchanged by exec), and is only signalled while both match, so a
recycled pid is never killed. When `die_with_parent` is set
(test sessions), Linux's parent-death signal stops the component if the starting process dies, even
by SIGKILL, so nothing outlives an interrupted test run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

PR_SET_PDEATHSIG = 1


class ProcessRecord(BaseModel):
    """What is needed to find a started process again, from any later process."""

    name: str
    pid: int
    start_time: int  # clock ticks after boot, field 22 of /proc/PID/stat
    binary: str
    log: Path
    argv: list[str] = []  # to start it again (`DevCluster.start_component`)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of `pid`, or None when there is no such process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0], int(fields[19])


def _die_with_parent() -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)

    def set_parent_death_signal() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_parent_death_signal


def start(
    name: str, argv: Sequence[str], log: Path, *, die_with_parent: bool = False
) -> tuple[ProcessRecord, subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent() if die_with_parent else None,  # noqa: PLW1509
        )
    stat = _stat(popen.pid)
    record = ProcessRecord(
        name=name,
        pid=popen.pid,
        start_time=stat[1] if stat else -1,
        binary=str(argv[0]),
        log=log,
        argv=list(argv),
    )
    return record, popen


def is_running(record: ProcessRecord) -> bool:
    """True while `record.pid` is alive (not a zombie) and is the process that was started."""
    stat = _stat(record.pid)
    return stat is not None and stat[1] == record.start_time and stat[0] not in ("Z", "X")


def stop(record: ProcessRecord, *, timeout: float = 10.0) -> None:
    """SIGTERM the process, then SIGKILL it if it has not exited within `timeout` seconds; with
    no timeout, SIGKILL at once (a crash: nothing of a graceful exit runs)."""
    signals = ((signal.SIGTERM, timeout),) if timeout > 0 else ()
    try:
        for sig, wait in (*signals, (signal.SIGKILL, 5.0)):
            if not is_running(record):
                return
            try:
                os.kill(record.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while is_running(record) and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        _reap(record.pid)


def _reap(pid: int) -> None:
    """Collect the exit status of a child of this process, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):  # not our child: its parent (or init) reaps it
        os.waitpid(pid, os.WNOHANG)


def last_log_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except FileNotFoundError:
        return "(no log)"
    return lines[-1].strip()[:300] if lines else "(empty log)"
