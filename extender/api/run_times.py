"""How long gangs run: the `lahar.io/expected-run-time` annotation and the bounded history of
finished runs, as `lahar whatif` reads them to say when running gangs end.

The annotation is a Go duration (`45m`, a point) or a range of two (`30m-1h`); `parse_run_time`
returns it as (low, high) seconds or a `ValueError` naming what is wrong with it.

`RunHistory` is what the ConfigMap `lahar-system/lahar-run-times` holds under `runs.json`: per
owner (a gang's owner key, `namespace/name` of its Volcano Job or other owner) the last 16 run
times in seconds, its queue and when it last finished; per queue the last 64 run times of all its
owners. At most 512 owners and 256 queues are kept, the least recently finished dropped first, so
the document stays far below the 1 MiB an object may hold however long the cluster runs (about
384 KiB with every bound full and 63-character names, `tests/unit/api/test_run_times.py`).
Run times and finish times are kept in whole seconds, as Kubernetes writes times. A history is a
value: `add` returns a new one. `parse_history` never raises: a document that is not JSON or has a
bad field gives an empty history and one line naming the problem, since the history only sharpens
an estimate and an unreadable one must not cost the estimate. `dump` writes keys in sorted order,
so equal histories give equal text. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from extender.api.duration import parse_duration

RUN_TIME_ANNOTATION = "lahar.io/expected-run-time"
HISTORY_NAMESPACE = "lahar-system"
HISTORY_NAME = "lahar-run-times"
HISTORY_KEY = "runs.json"

OWNER_RUNS = 16  # run times kept per owner
QUEUE_RUNS = 64  # run times kept per queue
OWNERS = 512  # owners kept, the least recently finished dropped first
QUEUES = 256  # queues kept, likewise

SampleSource = Literal["owner", "queue"]


def parse_run_time(text: str, name: str = RUN_TIME_ANNOTATION) -> tuple[float, float]:
    """(low, high) seconds of `45m` (low = high) or `30m-1h`; a ValueError says what is wrong
    with it, naming it `name` (the annotation, or the flag it was given as)."""
    body = text.strip()
    if not body:
        raise ValueError(
            f"{name} is empty: expected a duration such as 45m or a range such as 30m-1h"
        )
    low_text, dash, high_text = body.partition("-")
    if not low_text or (dash and high_text.startswith("-")):
        raise ValueError(f"{name} {text!r}: a run time cannot be negative")
    if dash and not high_text:
        raise ValueError(f"{name} {text!r}: the range has no upper end (30m-1h)")
    low = _duration(low_text, text, name)
    high = _duration(high_text, text, name) if dash else low
    if low > high:
        raise ValueError(
            f"{name} {text!r}: the lower end {low_text} is above the upper end {high_text}"
        )
    return low, high


def _duration(part: str, text: str, name: str) -> float:
    try:
        seconds = parse_duration(part)
    except ValueError as error:
        raise ValueError(f"{name} {text!r}: {error}") from None
    if seconds < 0:
        raise ValueError(f"{name} {text!r}: a run time cannot be negative")
    return seconds


_Runs = TypeVar("_Runs", bound="_Finished")


def _last(count: int) -> AfterValidator:
    return AfterValidator(lambda runs: runs[-count:])


def _most_recent(count: int) -> AfterValidator:
    def keep(entries: dict[str, _Runs]) -> dict[str, _Runs]:
        if len(entries) <= count:
            return entries
        kept = sorted(entries, key=lambda key: (entries[key].finished, key))[-count:]
        return {key: entries[key] for key in sorted(kept)}

    return AfterValidator(keep)


Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Moment = Annotated[float, Field(allow_inf_nan=False)]  # epoch seconds


class _Finished(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="ignore")

    finished: Moment  # when the last run recorded here finished


class OwnerRuns(_Finished):
    """One owner's last run times (oldest first) and the queue of its last run."""

    queue: str
    runs: Annotated[tuple[Seconds, ...], _last(OWNER_RUNS)] = ()


class QueueRuns(_Finished):
    """The last run times of every owner in one queue (oldest first)."""

    runs: Annotated[tuple[Seconds, ...], _last(QUEUE_RUNS)] = ()


class RunHistory(BaseModel):
    """Finished runs per owner and per queue, bounded (see the module's docstring)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="ignore")

    owners: Annotated[dict[str, OwnerRuns], _most_recent(OWNERS)] = Field(default_factory=dict)
    queues: Annotated[dict[str, QueueRuns], _most_recent(QUEUES)] = Field(default_factory=dict)

    def add(self, owner: str, queue: str, seconds: float, finished_at: float) -> RunHistory:
        """This history with one more run of `owner` in `queue`, `seconds` long, that finished at
        `finished_at` (epoch seconds). A negative or infinite run time is a ValueError."""
        if not 0 <= seconds < float("inf") or not abs(finished_at) < float("inf"):
            raise ValueError(f"run of {owner}: {seconds} s finished at {finished_at} is no run")
        seconds, finished_at = float(round(seconds)), float(round(finished_at))
        mine = self.owners.get(owner)
        theirs = self.queues.get(queue)
        owners = {
            **self.owners,
            owner: OwnerRuns(
                queue=queue,
                finished=max(finished_at, mine.finished) if mine else finished_at,
                runs=(*(mine.runs if mine else ()), seconds),
            ),
        }
        queues = {
            **self.queues,
            queue: QueueRuns(
                finished=max(finished_at, theirs.finished) if theirs else finished_at,
                runs=(*(theirs.runs if theirs else ()), seconds),
            ),
        }
        return RunHistory(owners=owners, queues=queues)

    def samples(self, owner: str, queue: str) -> tuple[tuple[float, ...], SampleSource | None]:
        """The owner's run times if it has any, else its queue's, and which they are."""
        mine = self.owners.get(owner)
        if mine is not None and mine.runs:
            return mine.runs, "owner"
        theirs = self.queues.get(queue)
        if theirs is not None and theirs.runs:
            return theirs.runs, "queue"
        return (), None

    def dump(self) -> str:
        """The history as `runs.json` holds it: compact JSON, keys sorted."""
        document: Mapping[str, object] = self.model_dump(mode="json")
        return json.dumps(document, sort_keys=True, separators=(",", ":"))


def parse_history(text: str) -> tuple[RunHistory, str | None]:
    """The history `text` holds, or an empty one and the one-line reason it cannot be read."""
    try:
        return RunHistory.model_validate_json(text), None
    except ValidationError as error:
        first, *others = error.errors(include_url=False)
        where = ".".join(str(part) for part in first["loc"]) or "the document"
        more = f" (and {len(others)} more problems)" if others else ""
        return RunHistory(), f"{HISTORY_KEY}: {where}: {first['msg']}{more}"
