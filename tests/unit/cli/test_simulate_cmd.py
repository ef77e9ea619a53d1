"""`lahar simulate`: the table per policy, and a clear error for a broken trace."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from extender.cli import simulate_cmd
from extender.cli.main import main
from extender.simulate.run import Progress


def test_the_default_story_compares_lahar_and_stock(capsys: pytest.CaptureFixture[str]) -> None:
    """With no arguments: the seeds' story, then the synthetic multi-queue trace."""
    assert main(["simulate"]) == 0
    story, synthetic = capsys.readouterr().out.split("\n\n")
    lines = story.splitlines()
    assert lines[0] == "the seeds' story: 2 jobs, 2 nodes"
    assert lines[1].split()[:4] == ["POLICY", "JOBS", "DONE", "MAKESPAN"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["lahar"][1:4] == ["2", "2", "20.0m"]
    assert rows["stock"][1:4] == ["2", "0", "never"]
    lines = synthetic.splitlines()
    assert lines[0] == "the synthetic multi-queue trace: 400 jobs, 40 nodes"
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["lahar"][1:3] == ["400", "400"]
    assert rows["lahar"][9] == "0"  # no partial gang
    assert int(rows["stock"][9]) > 0


def test_a_broken_trace_is_named(tmp_path: Path) -> None:
    trace = tmp_path / "trace.yaml"
    trace.write_text("nodes: [{count: 0, cpu: '8', memory: 1Gi}]\n")
    with pytest.raises(SystemExit, match=r"trace.yaml: nodes.0.count: Input should be greater"):
        main(["simulate", str(trace)])


def test_progress_goes_to_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Piped or redirected, stderr gets no progress lines; on a terminal one line is rewritten."""
    assert main(["simulate"]) == 0
    assert capsys.readouterr().err == ""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    show = simulate_cmd._progress_shown()
    assert show is not None
    show(Progress("lahar", 7200.0, 10, 6, 4, 3, 12.4))
    assert terminal.getvalue() == (
        "\r\033[Klahar: 2.0h simulated, 3 of 10 jobs done, 2 waiting to start (12s)"
    )
    # Policies played side by side share the line, each as it last reported.
    show(Progress("stock", 600.0, 10, 10, 9, 8, 13.0))
    assert terminal.getvalue().rpartition("\r\033[K")[2] == (
        "lahar: 2.0h, 3/10 done | stock: 10.0m, 8/10 done"
    )
