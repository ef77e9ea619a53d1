"""Table rows for Volcano's objects as `lahar job|queue|podgroup list` prints them (vcctl's
columns, kubectl's style). Queues come as their tree (`queue_rows`): each under its parent,
indented two spaces per level, with its fair share (`status.deserved`) and how far into it the
queue is (SHARE: allocated / deserved, the largest over resources; above 1 it is allocated more
than it deserves). Pure: objects in (plain dicts as the API returns them), strings out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from extender.api.quantity import format_units
from extender.api.resources import Resources
from extender.api.scheduling import ROOT
from extender.cli.kubectl import age
from extender.framework.engine import QueueTree, share

JOB_HEADERS = (
    *("NAME", "STATUS", "MIN", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "RETRIES"),
    *("QUEUE", "AGE"),
)
JOB_WIDE = ("VERSION", "REASON")
QUEUE_HEADERS = (
    *("NAME", "WEIGHT", "STATE", "PENDING", "INQUEUE", "RUNNING", "COMPLETED"),
    *("ALLOCATED", "DESERVED", "SHARE", "AGE"),
)
QUEUE_WIDE = ("CAPABILITY", "RECLAIMABLE")
GROUP_HEADERS = ("NAME", "PHASE", "MINMEMBER", "RUNNING", "SUCCEEDED", "FAILED", "QUEUE", "AGE")
GROUP_WIDE = ("CONDITION", "MESSAGE")


def _count(status: dict[str, Any], key: str) -> str:
    return str(status.get(key) or 0)


def _created(obj: dict[str, Any], now: datetime | None) -> str:
    return age((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _resources(amounts: dict[str, Any] | None) -> str:
    """`cpu=64,memory=32Gi`: each amount in its resource's usual unit (as written when it does
    not parse)."""
    shown = []
    for name, value in sorted((amounts or {}).items()):
        try:
            amount = Resources.parse({name: value})[name]
        except ValueError:
            shown.append(f"{name}={value}")
        else:
            shown.append(f"{name}={format_units(amount, name)}")
    return ",".join(shown) or "-"


def _share(allocated: dict[str, Any] | None, deserved: dict[str, Any] | None) -> str:
    """Allocated over deserved, the largest over resources; `-` when no share is written."""
    if not deserved:
        return "-"
    try:
        has, fair = Resources.parse(allocated or {}), Resources.parse(deserved)
    except ValueError:
        return "?"
    return f"{share(has, fair):.2f}"


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


def queue_rows(
    queues: list[dict[str, Any]], wide: bool = False, now: datetime | None = None
) -> list[list[str]]:
    """The queues' rows in tree order: parents before their children, siblings by name, each
    name indented by its depth (a `root` Queue, when listed, at the top)."""
    named = {queue["metadata"]["name"]: queue for queue in queues}
    tree = QueueTree.named({n: (q.get("spec") or {}).get("parent") or "" for n, q in named.items()})
    order = ([ROOT] if ROOT in named else []) + list(tree.below(ROOT))
    shift = 0 if ROOT in named else 1
    return [queue_row(named[n], wide=wide, now=now, depth=tree.depth(n) - shift) for n in order]


def queue_row(
    queue: dict[str, Any],
    namespaced: bool = False,
    wide: bool = False,
    now: datetime | None = None,
    depth: int = 0,
) -> list[str]:
    """A Queue's row (Queues have no namespace: `namespaced` is there to match the others)."""
    spec, status = queue.get("spec") or {}, queue.get("status") or {}
    name = "  " * depth + queue["metadata"]["name"]
    row = [name, str(spec.get("weight") or 1), status.get("state") or "Open"]
    row += [_count(status, k) for k in ("pending", "inqueue", "running", "completed")]
    row += [_resources(status.get("allocated")), _resources(status.get("deserved"))]
    row += [_share(status.get("allocated"), status.get("deserved")), _created(queue, now)]
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
