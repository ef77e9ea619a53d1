"""Counting error lines and tracebacks in the dev cluster's logs, per log format."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.demo.log_errors import (
    ComponentLog,
    LogCount,
    LogStyle,
    count_lines,
    count_log,
    summary,
)

PY_INFO = "2026-11-26 22:44:13,576 INFO extender.server.queue_writer: created Queue default"
PY_ERROR = "2026-11-26 22:44:13,576 ERROR extender.server.status_writer: could not bring ..."
PY_CRITICAL = "2026-11-26 22:44:13,576 CRITICAL extender.serve: the cache cannot sync"
PY_WARNING = "2026-11-26 22:44:13,576 WARNING extender.x: could not write status: ERROR 500"
TRACEBACK = "Traceback (most recent call last):"
KLOG_INFO = 'I1126 22:44:04.109285   29206 server.go:95] "Serving securely"'
KLOG_ERROR = "E1126 22:44:04.109285   29206 controller.go:95] Found stale data, removed endpoints"
KLOG_FATAL = "F1126 22:44:04.109285   29206 run.go:72] cannot listen"
ETCD_ERROR = '{"level":"error","ts":"2026-11-26T22:44:33Z","msg":"serving failed"}'
ETCD_WARN = '{"level":"warn","ts":"2026-11-26T22:44:33Z","msg":"slow fdatasync"}'
KWOK_ERROR = '{"time":"2026-11-26T22:44:13Z","level":"ERROR","msg":"failed to apply stage"}'
KWOK_INFO = '{"time":"2026-11-26T22:44:13Z","level":"INFO","msg":"Delete pod"}'


@pytest.mark.parametrize(
    ("lines", "style", "errors", "tracebacks"),
    [
        pytest.param([], LogStyle.PYTHON, 0, 0, id="empty"),
        pytest.param([PY_INFO, PY_INFO], LogStyle.PYTHON, 0, 0, id="python-clean"),
        pytest.param([PY_INFO, PY_ERROR], LogStyle.PYTHON, 1, 0, id="python-error"),
        pytest.param([PY_CRITICAL], LogStyle.PYTHON, 1, 0, id="python-critical"),
        # the word ERROR in a warning's message is not an error line
        pytest.param([PY_WARNING], LogStyle.PYTHON, 0, 0, id="python-warning-mentions-error"),
        # log.exception: the ERROR line, then the traceback
        pytest.param(
            [PY_ERROR, TRACEBACK, '  File "x.py", line 1, in f', "KeyError: 'a'"],
            LogStyle.PYTHON,
            1,
            1,
            id="python-exception",
        ),
        # a chained exception prints two tracebacks
        pytest.param(
            [TRACEBACK, "KeyError", "During handling of the above exception", TRACEBACK, "E"],
            LogStyle.PYTHON,
            0,
            2,
            id="python-chained-traceback",
        ),
        # a klog line in a Python log is not Lahar's format
        pytest.param([KLOG_ERROR], LogStyle.PYTHON, 0, 0, id="python-ignores-klog"),
        pytest.param([KLOG_INFO, KLOG_ERROR], LogStyle.KLOG, 1, 0, id="klog-error"),
        pytest.param([KLOG_FATAL], LogStyle.KLOG, 1, 0, id="klog-fatal"),
        pytest.param(["panic: runtime error", "goroutine 1 [running]:"], LogStyle.KLOG, 0, 1),
        pytest.param([PY_ERROR], LogStyle.KLOG, 0, 0, id="klog-ignores-python"),
        pytest.param([ETCD_WARN, ETCD_ERROR], LogStyle.JSON, 1, 0, id="json-etcd"),
        pytest.param([KWOK_INFO, KWOK_ERROR], LogStyle.JSON, 1, 0, id="json-kwok"),
        pytest.param(["{not json", "[1]", '{"level": 3}'], LogStyle.JSON, 0, 0, id="json-odd"),
    ],
)
def test_count_lines(lines: list[str], style: LogStyle, errors: int, tracebacks: int) -> None:
    count = count_lines(lines, style)
    assert (count.errors, count.tracebacks) == (errors, tracebacks)
    assert count.clean == (errors == 0 and tracebacks == 0)


def test_the_first_error_lines_are_kept_without_their_newline() -> None:
    lines = [f"{PY_ERROR} {n}\n" for n in range(5)]
    count = count_lines(lines, LogStyle.PYTHON)
    assert count.errors == 5
    assert count.first == tuple(f"{PY_ERROR} {n}" for n in range(3))


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        pytest.param("lahar", f"{PY_INFO}\n{PY_ERROR}\n{TRACEBACK}\n", (1, 1), id="extender"),
        pytest.param("lahar-webhook", f"{PY_INFO}\n", (0, 0), id="webhook"),
        pytest.param("kube-apiserver", f"{KLOG_ERROR}\n", (1, 0), id="klog"),
        pytest.param("kwok", f"{KWOK_ERROR}\n", (1, 0), id="kwok"),
        pytest.param("lahar-controller", None, (0, 0), id="no-file"),
    ],
)
def test_count_log_reads_the_component_s_format(
    tmp_path: Path, name: str, text: str | None, expected: tuple[int, int]
) -> None:
    log = tmp_path / f"{name}.log"
    if text is not None:
        log.write_text(text)
    found = count_log(name, log)
    assert found is not None
    assert (found.count.errors, found.count.tracebacks) == expected


def test_a_component_of_unknown_format_is_not_counted(tmp_path: Path) -> None:
    assert count_log("something-else", tmp_path / "x.log") is None


def test_summary_names_lahar_s_components_then_the_others_apart() -> None:
    clean = LogCount()
    broken = LogCount(errors=2, tracebacks=1, first=(PY_ERROR,))
    lines = summary(
        [
            ComponentLog("kube-apiserver", Path("/l/kube-apiserver.log"), LogCount(errors=1)),
            ComponentLog("lahar-webhook", Path("/l/lahar-webhook.log"), clean),
            ComponentLog("lahar", Path("/l/lahar.log"), broken),
        ]
    )
    assert lines == [
        "webhook: 0 ERROR lines, 0 tracebacks (log: /l/lahar-webhook.log)",
        "extender: 2 ERROR lines, 1 traceback (log: /l/lahar.log)",
        f"    {PY_ERROR}",
        "Kubernetes components (not counted: some errors are benign at start and stop):",
        "  kube-apiserver: 1 error line, 0 panics (log: /l/kube-apiserver.log)",
    ]
