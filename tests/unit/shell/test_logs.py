"""The log formats: a JSON line carries the time (RFC 3339, UTC, milliseconds), the level, the
logger, the formatted message, the object the call names and the traceback, and parses as JSON
whatever the message holds; the text format is the one the demo's log reader counts."""

from __future__ import annotations

import datetime
import io
import json
import logging
import re
import sys
from typing import Any

import pytest

from extender.api.log_fields import about, about_gang, about_job, about_pod, about_queue
from extender.demo.log_errors import LogStyle, count_lines
from extender.shell.logs import JsonFormatter, formatter, handler

RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _record(
    message: str,
    *args: object,
    level: int = logging.INFO,
    extra: Any = None,
    exc_info: Any = None,
) -> logging.LogRecord:
    logger = logging.getLogger("extender.test")
    return logger.makeRecord(logger.name, level, __file__, 1, message, args, exc_info, extra=extra)


def _failure() -> Any:
    try:
        raise ValueError("the ledger is off by one")
    except ValueError:
        return sys.exc_info()


def _written(form: str, *records: logging.LogRecord) -> list[str]:
    stream = io.StringIO()
    out = handler(form, stream)
    for record in records:
        out.handle(record)
    return stream.getvalue().splitlines()


@pytest.mark.parametrize(
    ("extra", "fields"),
    [
        pytest.param(
            about_pod("ml/tf-worker-0", gang="ml/tf"),
            {"kind": "Pod", "namespace": "ml", "name": "tf-worker-0", "gang": "ml/tf"},
            id="pod of a gang",
        ),
        pytest.param(
            about_gang("ml/tf", queue="research"),
            {
                "kind": "PodGroup",
                "namespace": "ml",
                "name": "tf",
                "gang": "ml/tf",
                "queue": "research",
            },
            id="gang with its queue",
        ),
        pytest.param(
            about_gang("ml/podgroups.scheduling.x-k8s.io/tf"),
            {
                "kind": "PodGroup",
                "namespace": "ml",
                "name": "tf",
                "gang": "ml/podgroups.scheduling.x-k8s.io/tf",
            },
            id="gang of another kind",
        ),
        pytest.param(
            about_job("ml/mnist"),
            {"kind": "Job", "namespace": "ml", "name": "mnist"},
            id="job",
        ),
        pytest.param(
            about_queue("research"),
            {"kind": "Queue", "name": "research", "queue": "research"},
            id="cluster-scoped queue",
        ),
        pytest.param(about("Job", "ml/"), {"kind": "Job", "namespace": "ml"}, id="no name yet"),
        pytest.param(None, {}, id="about no object"),
    ],
)
def test_a_json_line_has_every_field_and_the_object_it_is_about(
    extra: Any, fields: dict[str, str]
) -> None:
    record = _record("gang %s: %d of %d members placed", "ml/tf", 2, 4, extra=extra)
    [line] = _written("json", record)
    parsed = json.loads(line)
    assert parsed == {
        "time": parsed["time"],
        "level": "INFO",
        "logger": "extender.test",
        "message": "gang ml/tf: 2 of 4 members placed",
        **fields,
    }
    assert RFC3339_MS.match(parsed["time"]), parsed["time"]
    written = datetime.datetime.fromisoformat(parsed["time"])
    assert written.utcoffset() == datetime.timedelta(0)
    created = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
    assert abs((written - created).total_seconds()) < 0.001


def test_a_traceback_stays_in_its_line_as_the_exception_field() -> None:
    failed = _record("a preemption pass failed", level=logging.ERROR, exc_info=_failure())
    said = _record("gang %s: evicting victim %s failed", "ml/tf", "ml/web-0", level=logging.WARNING)
    lines = _written("json", failed, said)
    assert len(lines) == 2  # a multi-line traceback does not split its record
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "ERROR" and first["message"] == "a preemption pass failed"
    assert first["exception"].startswith("Traceback (most recent call last):")
    assert first["exception"].endswith("ValueError: the ledger is off by one")
    assert second["level"] == "WARNING" and "exception" not in second


def test_a_stack_asked_for_stays_in_its_line_as_the_stack_field() -> None:
    logger = logging.getLogger("extender.test")
    stream = io.StringIO()
    out = handler("json", stream)
    logger.addHandler(out)
    try:
        logger.warning("watch of %s: slow", "pods", stack_info=True)
    finally:
        logger.removeHandler(out)
    [line] = stream.getvalue().splitlines()
    parsed = json.loads(line)
    assert parsed["message"] == "watch of pods: slow" and "exception" not in parsed
    assert parsed["stack"].startswith("Stack (most recent call last):")
    assert "test_a_stack_asked_for_stays_in_its_line_as_the_stack_field" in parsed["stack"]


@pytest.mark.parametrize(
    "message",
    [
        'quotes " and \\ backslashes',
        "line\nbreaks\r\nand\ttabs",
        "non-ASCII: ünïcødé, 日本語, \u2028",
        "control \x00\x1b characters",
        '{"looks": ["like json"]}',
    ],
)
def test_each_line_parses_as_json_whatever_the_message_holds(message: str) -> None:
    [line] = _written("json", _record("pod %s: %s", "ml/x", message, extra=about_pod("ml/x")))
    assert json.loads(line)["message"] == f"pod ml/x: {message}"


def test_the_text_format_is_the_one_the_demo_reads() -> None:
    """One line a record, a traceback under it: `demo.log_errors` counts its errors and
    tracebacks."""
    lines = _written(
        "text",
        _record("listed %d %s", 3, "pods", extra=about_pod("ml/x")),
        _record("watch of pods failed", level=logging.WARNING),
        _record("a preemption pass failed", level=logging.ERROR, exc_info=_failure()),
    )
    assert re.match(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO extender\.test: listed 3 pods$", lines[0]
    )
    assert " WARNING extender.test: watch of pods failed" in lines[1]
    count = count_lines(lines, LogStyle.PYTHON)
    assert (count.errors, count.tracebacks) == (1, 1)


def test_an_unknown_format_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown log format 'xml' \\(known: text, json\\)"):
        formatter("xml")
    assert isinstance(formatter("json"), JsonFormatter)
