"""The demo's summary of the components' logs: one line each, and whether Lahar's are clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.demo.script import report_logs
from extender.devcluster.child_processes import ProcessRecord

ERROR = "2026-11-26 22:44:13,576 ERROR extender.server.status_writer: could not bring ...\n"
INFO = "2026-11-26 22:44:13,576 INFO extender.server.queue_writer: created Queue default\n"
KLOG_ERROR = "E1126 22:44:04.109285   29206 controller.go:95] Found stale data\n"


def _records(tmp_path: Path, logs: dict[str, str]) -> list[ProcessRecord]:
    records = []
    for name, text in logs.items():
        log = tmp_path / f"{name}.log"
        log.write_text(text)
        records.append(ProcessRecord(name=name, pid=1, start_time=1, binary=name, log=log))
    return records


@pytest.mark.parametrize(
    ("logs", "clean"),
    [
        pytest.param({"lahar": INFO, "lahar-webhook": INFO}, True, id="clean"),
        pytest.param({"lahar": INFO, "kube-apiserver": KLOG_ERROR}, True, id="kubernetes-only"),
        pytest.param({"lahar": INFO, "lahar-controller": ERROR}, False, id="controller-error"),
    ],
)
def test_report_logs_is_clean_unless_a_lahar_component_logged_an_error(
    tmp_path: Path, logs: dict[str, str], clean: bool
) -> None:
    said: list[str] = []
    assert report_logs(_records(tmp_path, logs), said.append) is clean
    assert said[0] == "  logs:"
    assert f"    extender: 0 ERROR lines, 0 tracebacks (log: {tmp_path / 'lahar.log'})" in said
