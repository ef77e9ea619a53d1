"""Table rows for Volcano's objects as `lahar job|queue|podgroup list` prints them (vcctl's
columns, kubectl's style). Pure: objects in (plain dicts as the API returns them), strings out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from extender.cli.kubectl import age

JOB_HEADERS = (
    *("NAME", "STATUS", "MIN", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "RETRIES"),
    *("QUEUE", "AGE"),
)
JOB_WIDE = ("VERSION", "REASON")
QUEUE_HEADERS = (
    *("NAME", "WEIGHT", "STATE", "PENDING", "INQUEUE", "RUNNING", "COMPLETED"),
    *("ALLOCATED", "AGE"),
)
QUEUE_WIDE = ("CAPABILITY", "RECLAIMABLE")
GROUP_HEADERS = ("NAME", "PHASE", "MINMEMBER", "RUNNING", "SUCCEEDED", "FAILED", "QUEUE", "AGE")
GROUP_WIDE = ("CONDITION", "MESSAGE")


def _count(status: dict[str, Any], key: str) -> str:
    return str(status.get(key) or 0)


def _created(obj: dict[str, Any], now: datetime | None) -> str:
    return age((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _resources(amounts: dict[str, Any] | None) -> str:
    return ",".join(f"{name}={value}" for name, value in sorted((amounts or {}).items())) or "-"


def _headers(
    base: tuple[str, ...], wide_columns: tuple[str, ...], across: bool, wide: bool
) -> tuple[str, ...]:
    return (("NAMESPACE",) if across else ()) + base + (wide_columns if wide else ())


def job_headers(across: bool, wide: bool) -> tuple[str, ...]:
    return _headers(JOB_HEADERS, JOB_WIDE, across, wide)


def queue_headers(across: bool, wide: bool) -> tuple[str, ...]:
    return _headers(QUEUE_HEADERS, QUEUE_WIDE, across, wide)


def group_headers(across: bool, wide: bool) -> tuple[str, ...]:
    return _headers(GROUP_HEADERS, GROUP_WIDE, across, wide)


def job_row(
    job: dict[str, Any], namespaced: bool, wide: bool, now: datetime | None = None
) -> list[str]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    state = status.get("state") or {}
    row = [
        job["metadata"]["name"],
        state.get("phase") or "Pending",
        str(spec.get("minAvailable") or 0),
    ]
    row += [_count(status, k) for k in ("pending", "running", "succeeded", "failed", "retryCount")]
    row += [spec.get("queue") or "default", _created(job, now)]
    if wide:
        row += [_count(status, "version"), state.get("reason") or "-"]
    return ([job["metadata"].get("namespace", "")] if namespaced else []) + row


def queue_row(
    queue: dict[str, Any], namespaced: bool = False, wide: bool = False, now: datetime | None = None
) -> list[str]:
    """A Queue's row (Queues have no namespace: `namespaced` is there to match the others)."""
    spec, status = queue.get("spec") or {}, queue.get("status") or {}
    row = [queue["metadata"]["name"], str(spec.get("weight") or 1), status.get("state") or "Open"]
    row += [_count(status, k) for k in ("pending", "inqueue", "running", "completed")]
    row += [_resources(status.get("allocated")), _created(queue, now)]
    if wide:
        reclaimable = spec.get("reclaimable")
        row += [_resources(spec.get("capability")), "false" if reclaimable is False else "true"]
    return row


def group_row(
    group: dict[str, Any], namespaced: bool, wide: bool, now: datetime | None = None
) -> list[str]:
    spec, status = group.get("spec") or {}, group.get("status") or {}
    row = [
        group["metadata"]["name"],
        status.get("phase") or "Pending",
        str(spec.get("minMember") or 0),
    ]
    row += [_count(status, k) for k in ("running", "succeeded", "failed")]
    row += [spec.get("queue") or "default", _created(group, now)]
    if wide:
        condition = last_condition(group)
        row += [
            f"{condition.get('type')}={condition.get('status')}" if condition else "-",
            (condition or {}).get("message") or "-",
        ]
    return ([group["metadata"].get("namespace", "")] if namespaced else []) + row


def last_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The condition that changed last (what the object says now)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    if not conditions:
        return None
    latest: dict[str, Any] = max(conditions, key=lambda c: c.get("lastTransitionTime") or "")
    return latest
