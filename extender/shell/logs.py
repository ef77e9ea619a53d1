"""How Lahar's processes write their log: the two formats, the levels, and the setup `lahar` runs.

- `text` (the default): one line a record, `2026-01-02 03:04:05,678 INFO extender.x: message`,
  in local time, with a traceback under the line that has one. `demo.log_errors` reads this format.
- `json`: one JSON object a line, for a log pipeline: `time` (RFC 3339, UTC, milliseconds),
  `level`, `logger`, `message` (formatted), the object the line is about as the call's `extra`
  gives it (`api.log_fields`: `kind`, `namespace`, `name`, `gang`, `queue`), `exception` (the
  formatted traceback) when there is one, and `stack` (the call stack) when the logging call asked
  for it (`stack_info=True`). A traceback or a stack stays inside its line (JSON escapes its line
  breaks), so one record is always one line.

Levels are `debug`, `info` (the default), `warning` and `error`. ERROR means Lahar itself is wrong
(a bug, a broken invariant, a built-in object the API server accepted that Lahar's model refuses):
a caller's mistake (a malformed request, a CRD's object its schema let through that Lahar cannot
read) or the API server failing for a while is a WARNING naming what was wrong, without a
traceback.
Built on the standard library's `logging` only: the formatter is a `logging.Formatter`.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Mapping
from typing import IO

from extender.api.log_fields import FIELDS, SUBJECT

FORMATS = ("text", "json")
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One record as one JSON object on one line (see the module's docstring for its fields)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, str] = {
            "time": _rfc3339(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        subject = getattr(record, SUBJECT, None)
        if isinstance(subject, Mapping):
            line.update((field, str(subject[field])) for field in FIELDS if subject.get(field))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line)


def _rfc3339(created: float) -> str:
    """`2026-01-02T03:04:05.678Z`: the record's time in UTC, to the millisecond."""
    when = datetime.datetime.fromtimestamp(created, tz=datetime.UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def formatter(form: str) -> logging.Formatter:
    """The formatter of log format `form` (one of `FORMATS`)."""
    if form == "json":
        return JsonFormatter()
    if form == "text":
        return logging.Formatter(TEXT)
    raise ValueError(f"unknown log format {form!r} (known: {', '.join(FORMATS)})")


def handler(form: str, stream: IO[str] | None = None) -> logging.Handler:
    """A handler writing records to `stream` (stderr when None) in format `form`."""
    written = logging.StreamHandler(stream)
    written.setFormatter(formatter(form))
    return written


def configure(form: str, level: str) -> None:
    """Send every record of `level` (one of `LEVELS`) and above to stderr in format `form`.
    As `logging.basicConfig`, it leaves a root logger that has a handler already as it is."""
    logging.basicConfig(level=LEVELS[level], handlers=[handler(form)])
