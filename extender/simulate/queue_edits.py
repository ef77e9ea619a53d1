"""A change to a queue a what-if plays: `lahar whatif --queue ml.weight=4`.

An edit names a queue, a field and a value: `weight`, `priority`, `reclaimable`, `state` (Open or
Closed), or one resource of `capability`, `guarantee` or `deserved` (`ml.capability.cpu=64`,
`ml.guarantee.nvidia.com/gpu=8`; an empty value removes it). Each edit is applied to the
snapshot's queue and the queue is checked as the admission webhook checks an update of it
(`admission.admit.validate_queue`: the weight's range, a guarantee within the parent's, a
capability a child may not exceed...), against the snapshot's other queues, so a change the
cluster would refuse is refused here with the webhook's message; the edited trace is then read
again (`parse_trace`), so its own rules hold too. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from extender.admission.admit import Settings, validate_queue
from extender.api.admission import AdmissionRequest, GroupVersionKind, GroupVersionResource
from extender.api.quantity import parse_quantity
from extender.api.scheduling import API_VERSION, DEFAULT_QUEUE
from extender.simulate import world
from extender.simulate.job_input import SnapshotQueues
from extender.simulate.trace import Trace, TraceError, parse_trace

SCALARS = {"weight", "priority", "reclaimable", "state"}
RESOURCES = {"capability", "guarantee", "deserved"}
FIELDS = "weight, priority, reclaimable, state, capability.R, guarantee.R, deserved.R"


@dataclass(frozen=True)
class Edit:
    queue: str
    field: str  # weight, priority, reclaimable, state, capability, guarantee or deserved
    resource: str  # the resource of capability, guarantee or deserved; "" for the others
    value: str

    def __str__(self) -> str:
        where = f"{self.field}.{self.resource}" if self.resource else self.field
        return f"{self.queue}.{where}={self.value}"


def parse_edit(text: str) -> Edit:
    """`QUEUE.FIELD=VALUE` as an Edit; a ValueError naming what is wrong."""
    target, equals, value = text.partition("=")
    if not equals:
        raise ValueError(f"{text!r}: expected QUEUE.FIELD=VALUE (FIELD: {FIELDS})")
    queue, dot, field = target.partition(".")
    if not queue or not dot or not field:
        raise ValueError(f"{text!r}: expected QUEUE.FIELD=VALUE (FIELD: {FIELDS})")
    name, _, resource = field.partition(".")
    if name in SCALARS and not resource:
        return Edit(queue, name, "", _scalar(name, value, text))
    if name in RESOURCES and resource:
        if value:
            try:
                parse_quantity(value)
            except ValueError as error:
                raise ValueError(f"{text!r}: {name}.{resource}: {error}") from None
        return Edit(queue, name, resource, value)
    raise ValueError(f"{text!r}: no field {field!r} (FIELD: {FIELDS})")


def apply(trace: Trace, edits: Sequence[Edit], settings: Settings | None = None) -> Trace:
    """The trace with the edits made; a ValueError with the webhook's message (or the trace's)
    when the cluster would refuse a queue so changed."""
    document = trace.model_dump(by_alias=True, mode="json", exclude_defaults=True)
    queues: list[dict[str, Any]] = document.setdefault("queues", [])
    for edit in edits:
        entry = next((q for q in queues if q["name"] == edit.queue), None)
        if entry is None:
            if edit.queue != DEFAULT_QUEUE:
                known = sorted({q["name"] for q in queues} | {DEFAULT_QUEUE})
                raise ValueError(f"{edit}: no queue {edit.queue} (known: {', '.join(known)})")
            entry = {"name": DEFAULT_QUEUE}
            queues.append(entry)
        _set(entry, edit)
    try:
        edited = parse_trace(document, source="the snapshot with --queue")
    except TraceError as error:
        raise ValueError(str(error)) from None
    _admitted(trace, edited, {edit.queue for edit in edits}, settings or Settings())
    return edited


def _scalar(name: str, value: str, text: str) -> str:
    if name in ("weight", "priority"):
        try:
            int(value)
        except ValueError:
            raise ValueError(f"{text!r}: {name} is a whole number, got {value!r}") from None
    elif name == "reclaimable" and value not in ("true", "false"):
        raise ValueError(f"{text!r}: reclaimable is true or false, got {value!r}")
    elif name == "state" and value not in ("Open", "Closed"):
        raise ValueError(f"{text!r}: state is Open or Closed, got {value!r}")
    return value


def _set(entry: dict[str, Any], edit: Edit) -> None:
    if edit.field in ("weight", "priority"):
        entry[edit.field] = int(edit.value)
    elif edit.field == "reclaimable":
        entry["reclaimable"] = edit.value == "true"
    elif edit.field == "state":
        entry["state"] = edit.value
    else:
        amounts = dict(entry.get(edit.field) or {})
        if edit.value:
            amounts[edit.resource] = edit.value
        else:
            amounts.pop(edit.resource, None)
        entry[edit.field] = amounts


def _admitted(before: Trace, after: Trace, names: set[str], settings: Settings) -> None:
    """Each edited queue passes the webhook's rules for an update, among the edited trace's
    queues."""
    old = {queue.metadata.name: queue for queue in world.queues(before)}
    view = SnapshotQueues(after)
    for queue in world.queues(after):
        name = queue.metadata.name
        if name not in names:
            continue
        body = queue.model_dump(by_alias=True, mode="json", exclude_defaults=True)
        body |= {"apiVersion": API_VERSION, "kind": "Queue"}
        previous = old.get(name)
        stored = (
            previous.model_dump(by_alias=True, mode="json", exclude_defaults=True)
            | {"apiVersion": API_VERSION, "kind": "Queue"}
            if previous is not None
            else None
        )
        group, _, version = API_VERSION.partition("/")
        request = AdmissionRequest(
            uid="whatif",
            kind=GroupVersionKind(group=group, version=version, kind="Queue"),
            resource=GroupVersionResource(group=group, version=version, resource="queues"),
            name=name,
            operation="UPDATE" if stored is not None else "CREATE",
            object=body,
            old_object=stored,
            dry_run=True,
        )
        outcome = validate_queue(request, view, settings)
        if outcome.message:
            raise ValueError(outcome.message)
