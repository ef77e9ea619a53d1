"""Processes are found again by pid and start time, so a recycled pid is never signalled."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from extender.devcluster import child_processes, ports
from extender.devcluster.errors import DevClusterError
from extender.kube import wait_until


@pytest.fixture
def sleeper(
    tmp_path: Path,
) -> Iterator[tuple[child_processes.ProcessRecord, subprocess.Popen[bytes]]]:
    record, popen = child_processes.start("sleeper", ["/bin/sleep", "60"], tmp_path / "sleep.log")
    yield record, popen
    popen.kill()
    popen.wait()


def test_a_started_process_is_running_at_once_and_stops_on_sigterm(
    sleeper: tuple[child_processes.ProcessRecord, subprocess.Popen[bytes]],
) -> None:
    record, _ = sleeper
    assert child_processes.is_running(record)

    child_processes.stop(record)

    assert not child_processes.is_running(record)
    assert not Path(f"/proc/{record.pid}").exists()  # exited and reaped, not a zombie


def test_a_recycled_pid_is_not_the_recorded_process_and_is_not_signalled(
    sleeper: tuple[child_processes.ProcessRecord, subprocess.Popen[bytes]],
) -> None:
    record, popen = sleeper
    impostor = record.model_copy(update={"start_time": record.start_time + 1})

    assert not child_processes.is_running(impostor)
    child_processes.stop(impostor)
    assert popen.poll() is None  # still alive


def test_a_process_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    script = "trap 'echo got TERM' TERM; echo trapped; while :; do sleep 0.1; done"
    log = tmp_path / "log"
    record, _ = child_processes.start("stubborn", ["/bin/sh", "-c", script], log)
    wait_until(lambda: "trapped" in log.read_text(), timeout=10, what="the shell to trap SIGTERM")

    child_processes.stop(record, timeout=0.5)

    assert not Path(f"/proc/{record.pid}").exists()
    assert "got TERM" in log.read_text()  # it saw SIGTERM, ignored it, and was killed anyway


def test_last_log_line_skips_blank_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("first\nthe last words\n\n")
    assert child_processes.last_log_line(log) == "the last words"
    assert child_processes.last_log_line(tmp_path / "absent.log") == "(no log)"


def test_free_ports_are_distinct_and_bindable() -> None:
    picked = ports.free_ports(5)
    assert len(set(picked)) == 5
    for port in picked:
        ports.require_free(port, "test", "--flag")


def test_require_free_fails_on_a_listening_port() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(DevClusterError, match=f"port {port} for the etcd is already in use"):
            ports.require_free(port, "etcd", "--etcd-port")
