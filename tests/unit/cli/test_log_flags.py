"""`--log-format` and `--log-level`: accepted before any command and after the long-running ones
(as a container's args list them), shown in those commands' --help, and obeyed by a running
`lahar serve` (its API server out of reach, so it logs both INFO and WARNING lines). Invoked as
`kubectl-lahar`, the program calls itself `kubectl lahar`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from extender.cli.main import build_parser, program
from extender.devcluster.ports import free_ports

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) \S+: ")


@pytest.mark.parametrize(
    ("argv", "form", "level"),
    [
        (["serve"], "text", "info"),
        (["--log-format", "json", "serve"], "json", "info"),
        (["serve", "--log-format=json", "--log-level=warning"], "json", "warning"),
        (["--log-level", "error", "controller"], "text", "error"),
        (["--log-format=json", "webhook", "--log-level", "debug"], "json", "debug"),
        (["--log-format=json", "serve", "--log-format=text"], "text", "info"),  # the later wins
        (["--log-level=warning", "job", "list"], "text", "warning"),
        (["--log-format=json", "dev-cluster", "status"], "json", "info"),
    ],
)
def test_the_log_flags_are_read_before_a_command_and_after_a_long_running_one(
    argv: list[str], form: str, level: str
) -> None:
    args = build_parser().parse_args(argv)
    assert (args.log_format, args.log_level) == (form, level)


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["serve", "--log-format=xml"], "argument --log-format: invalid choice: 'xml'"),
        (["--log-level=trace", "serve"], "argument --log-level: invalid choice: 'trace'"),
        (["job", "list", "--log-format=json"], "unrecognized arguments: --log-format=json"),
    ],
)
def test_a_wrong_log_flag_is_a_usage_error(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    assert complaint in capsys.readouterr().err


@pytest.mark.parametrize("command", ["serve", "controller", "webhook"])
def test_a_long_running_commands_help_shows_the_log_flags(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    shown = capsys.readouterr().out
    assert "--log-format {text,json}" in shown
    assert "--log-level {debug,info,warning,error}" in shown


@pytest.mark.parametrize(
    ("argv0", "name"),
    [
        ("/usr/local/bin/kubectl-lahar", "kubectl lahar"),
        ("kubectl-lahar", "kubectl lahar"),
        ("/work/.venv/bin/lahar", "lahar"),
        ("/usr/lib/python3.11/site-packages/extender/cli/main.py", "lahar"),
    ],
)
def test_the_program_is_named_as_it_was_invoked(argv0: str, name: str) -> None:
    assert program(argv0) == name
    assert build_parser(program(argv0)).format_usage().startswith(f"usage: {name} ")


def _kubeconfig(folder: Path) -> Path:
    """A kubeconfig of an API server that is not there (a port nothing listens on)."""
    (port,) = free_ports(1)
    path = folder / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def _run_serve(flags: list[str], folder: Path, done: Callable[[list[str]], bool]) -> list[str]:
    """The lines `lahar serve` with `flags` writes to stderr until `done` says enough (or 30 s),
    then it is stopped."""
    (port,) = free_ports(1)
    argv = [sys.executable, "-m", "extender.cli.main", "serve", *flags]
    argv += [f"--kubeconfig={_kubeconfig(folder)}", "--host=127.0.0.1", f"--port={port}"]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    stream = process.stderr
    assert stream is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")))
    reader.start()
    deadline = time.monotonic() + 30
    try:
        while not done(list(lines)) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(15)
        reader.join(15)
    return [line.rstrip("\n") for line in lines]


def _json_lines(lines: list[str]) -> list[dict[str, str]]:
    return [json.loads(line) for line in lines if line]


def _has(lines: list[str], level: str, text: str) -> bool:
    return any(level in line and text in line for line in lines)


def test_a_running_extender_writes_one_json_object_a_line(tmp_path: Path) -> None:
    lines = _run_serve(
        ["--log-format=json"],
        tmp_path,
        lambda lines: (
            _has(lines, '"INFO"', "serving the extender over HTTP")
            and _has(lines, '"WARNING"', "failed")
        ),
    )
    records = _json_lines(lines)  # every line parses
    assert records, "nothing logged"
    for record in records:
        assert {"time", "level", "logger", "message"} <= record.keys(), record
    levels = {record["level"] for record in records}
    assert {"INFO", "WARNING"} <= levels and "ERROR" not in levels, levels
    assert any(r["logger"] == "extender.serve" for r in records)


def test_a_running_extender_at_warning_leaves_info_out(tmp_path: Path) -> None:
    lines = _run_serve(
        ["--log-format=json", "--log-level=warning"],
        tmp_path,
        lambda lines: _has(lines, '"WARNING"', "failed"),
    )
    levels = {record["level"] for record in _json_lines(lines)}
    assert levels == {"WARNING"}, lines


def test_a_running_extender_writes_text_by_default(tmp_path: Path) -> None:
    lines = _run_serve(
        [],
        tmp_path,
        lambda lines: (
            _has(lines, " INFO ", "serving the extender over HTTP")
            and _has(lines, " WARNING ", "failed")
        ),
    )
    assert lines and all(TEXT_LINE.match(line) for line in lines), lines
