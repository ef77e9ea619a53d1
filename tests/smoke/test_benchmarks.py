"""Smoke runs of every benchmark script at sizes that take seconds, so none rots unseen: each still
parses its flags, builds its inputs, starts what it measures (its own dev cluster for e2e.py and
scaling.py, from the binaries `make test` builds) and prints its table. Figures are not checked:
speed lives in the scripts' output, never in a timed test."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_script(name: str, *args: str, timeout: float = 120) -> str:
    """Run benchmarks/NAME with ARGS; its output, or a failure that shows what it said."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("script", "args", "printed"),
    [
        ("simulate.py", ("--sizes", "30/4", "--policy", "lahar", "stock"), "30/4   stock"),
        ("webhook.py", ("--runs", "5"), "UPDATE of a 1.6 MiB job"),
        ("memory.py", ("--nodes", "50", "--pods", "200"), "peak RSS"),
    ],
)
def test_a_benchmark_script_runs_and_prints_its_table(
    script: str, args: tuple[str, ...], printed: str
) -> None:
    assert printed in run_script(script, *args)


def test_the_verbs_benchmark_serves_and_measures_every_verb() -> None:
    out = run_script("verbs.py", "--nodes", "50", "--calls", "30", "--port", str(free_port()))
    for verb in ("filter", "prioritize", "bind"):
        assert f"50 {verb}" in out


def test_the_end_to_end_benchmark_schedules_plain_pods_and_gangs_on_its_own_cluster() -> None:
    out = run_script(
        "e2e.py",
        *("--nodes", "4", "--pods", "16", "--gangs", "8", "--no-peer", "--timeout", "120"),
        timeout=300,
    )
    for run in ("(a)", "(b)", "(c8)"):
        assert run in out


def test_the_scaling_benchmark_prints_its_table(tmp_path: Path) -> None:
    plot = tmp_path / "scaling.png"
    out = run_script(
        "scaling.py",
        *("--nodes", "4", "--pods", "8", "--runs", "a", "--timeout", "120", "--plot", str(plot)),
        timeout=300,
    )
    assert f"plot written to {plot}" in out and plot.stat().st_size > 0
