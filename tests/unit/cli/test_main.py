"""The CLI's contract: an error a user can act on is one line on stderr with exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender import __version__
from extender.cli.main import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"lahar {__version__}"


def test_status_of_an_empty_state_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev-cluster", "status", "--state-dir", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().out.strip() == f"no dev cluster in {tmp_path / 'none'}"


def test_down_with_nothing_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev-cluster", "down", "--state-dir", str(tmp_path)]) == 0
    assert "no dev cluster was running" in capsys.readouterr().out
    assert not tmp_path.exists()


def test_a_corrupt_state_dir_is_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state.json").write_text("[]")

    code = main(["dev-cluster", "up", "--state-dir", str(tmp_path)])

    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"lahar: error: {tmp_path / 'state.json'} is not a dev cluster")
    assert (tmp_path / "state.json").exists()  # the user's files are left for them to inspect


def test_a_bad_scheduler_config_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "s.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Other\n")

    code = main(
        [
            "dev-cluster",
            "up",
            "--state-dir",
            str(tmp_path / "st"),
            "--scheduler-config",
            str(config),
        ]
    )

    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"lahar: error: scheduler config {config}: field kind must be "
        "'KubeSchedulerConfiguration', got 'Other'"
    )
