"""`lahar simulate`: the table per policy, and a clear error for a broken trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.cli.main import main


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
