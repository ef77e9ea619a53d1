"""`lahar simulate`: the table per policy, and a clear error for a broken trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.cli.main import main


def test_the_default_story_compares_lahar_and_stock(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["POLICY", "JOBS", "DONE", "MAKESPAN"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["lahar"][1:4] == ["2", "2", "20.0m"]
    assert rows["stock"][1:4] == ["2", "0", "never"]


def test_a_broken_trace_is_named(tmp_path: Path) -> None:
    trace = tmp_path / "trace.yaml"
    trace.write_text("nodes: [{count: 0, cpu: '8', memory: 1Gi}]\n")
    with pytest.raises(SystemExit, match=r"trace.yaml: nodes.0.count: Input should be greater"):
        main(["simulate", str(trace)])
