"""`lahar dev-cluster up|status|down` as a user runs it: a second, separate cluster that must leave
no process behind, and one-line errors for a busy port that start nothing."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from extender.devcluster.child_processes import is_running
from extender.devcluster.state_file import load_state


def lahar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "extender.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def processes_mentioning(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text.encode() in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def test_up_status_down_leaves_no_process_behind(tmp_path: Path) -> None:
    state_dir = tmp_path / "cluster"

    up = lahar("dev-cluster", "up", "--state-dir", str(state_dir), "--nodes", "1")
    assert up.returncode == 0, up.stderr
    assert f"KUBECONFIG={state_dir / 'kubeconfig'}" in up.stdout
    state = load_state(state_dir)
    assert state is not None
    assert {r.name for r in state.processes} == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
    }
    status = lahar("dev-cluster", "status", "--state-dir", str(state_dir))
    assert status.returncode == 0, status.stdout
    assert status.stdout.count(" running ") == 5
    again = lahar("dev-cluster", "up", "--state-dir", str(state_dir))
    assert again.returncode == 2
    assert "already running" in again.stderr

    down = lahar("dev-cluster", "down", "--state-dir", str(state_dir))

    assert down.returncode == 0, down.stderr
    assert not state_dir.exists()
    assert processes_mentioning(str(state_dir)) == []
    assert not any(is_running(record) for record in state.processes)


def test_a_busy_apiserver_port_is_one_clear_line_and_starts_nothing(tmp_path: Path) -> None:
    state_dir = tmp_path / "cluster"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]

        result = lahar(
            "dev-cluster", "up", "--state-dir", str(state_dir), "--apiserver-port", str(port)
        )

    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"port {port} for the kube-apiserver is already in use" in lines[0]
    assert "--apiserver-port" in lines[0]
    assert processes_mentioning(str(state_dir)) == []
    assert not (state_dir / "state.json").exists()
