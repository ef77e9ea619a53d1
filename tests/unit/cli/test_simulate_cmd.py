"""`lahar simulate`: the table per policy, and a clear error for a broken trace."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from extender.cli import simulate_cmd
from extender.cli.main import main
from extender.simulate.run import Progress


def test_the_default_story_compares_lahar_and_stock(capsys: pytest.CaptureFixture[str]) -> None:
    """With no arguments: the two-job story, then the synthetic multi-queue trace."""
    assert main(["simulate"]) == 0
    story, synthetic = capsys.readouterr().out.split("\n\n")
    lines = story.splitlines()
    assert lines[0] == "the two-job story: 2 jobs, 2 nodes"
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


def test_policies_are_named_by_stem_unless_stems_repeat(tmp_path: Path) -> None:
    lahar = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
    for folder in ("p1", "p2"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "lahar.yaml").write_text(lahar.read_text())
    first, second = str(tmp_path / "p1" / "lahar.yaml"), str(tmp_path / "p2" / "lahar.yaml")
    chosen = simulate_cmd._policies([first, second, "stock"])
    assert [name for name, _ in chosen] == [first, second, "stock"]
    assert [name for name, _ in simulate_cmd._policies([first, "stock"])] == ["lahar", "stock"]
    with pytest.raises(SystemExit, match=f"--policy {first} is given twice"):
        simulate_cmd._policies([first, first])


def test_a_trace_given_names_its_report_and_waits_of_started_jobs_are_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Job small runs; job huge asks for more than the node has and never starts: the waits
    are over the one job that started, and a note says so."""
    trace = tmp_path / "two-jobs.yaml"
    trace.write_text(
        "nodes: [{count: 1, cpu: '4', memory: 8Gi}]\n"
        "jobs:\n"
        "  - {name: small, tasks: [{name: w, replicas: 1, cpu: '1', memory: 1Gi, duration: 60}]}\n"
        "  - {name: huge, tasks: [{name: w, replicas: 1, cpu: '8', memory: 1Gi, duration: 60}]}\n"
    )
    assert simulate_cmd._traces(trace)[0][1] == "two-jobs"
    assert main(["simulate", str(trace), "--policy", "stock"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[4:6] == ["0s*", "0s*"]
    assert lines[2] == (
        "* stock: the waits are over the 1 jobs that started; 1 never did (they wait still, "
        "longer than any shown)"
    )


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
