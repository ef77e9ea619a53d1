"""A Job's lifecycle policies (`spec.policies`, `spec.tasks[*].policies`), checked as the
controller will read them: each policy matches events or one exit code (not both, not neither),
names events and an action the controller knows, and no event or exit code is handled twice in
one list; `*` stands alone. Unlike Volcano, the action is checked for exit-code policies too (an
unknown one would be ignored at run time), and `PodPending` needs a `timeout`.

`timeout` on another event is allowed but answered with a warning: Lahar acts on those at once.

The same concept at a higher layer: `controller.policies`, which reads the policies for the events
of the job's pods and the action each asks for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from extender.admission.problems import INT32, Problem, field, shown
from extender.api.batch import Action, Event, LifecyclePolicy
from extender.api.duration import parse_duration

EVENTS = tuple(e.value for e in Event)
ACTIONS = tuple(a.value for a in Action if a is not Action.SYNC_JOB)


def policy_problems(
    policies: Sequence[LifecyclePolicy], warnings: list[str], *at: str | int
) -> Iterator[Problem]:
    seen_events: dict[str, int] = {}
    seen_codes: dict[int, int] = {}
    for index, policy in enumerate(policies):
        here = (*at, index)
        events = policy.all_events
        if events and policy.exit_code is not None:
            yield Problem(field(*here), "give events or an exitCode, not both")
        elif not events and policy.exit_code is None:
            yield Problem(field(*here), "needs an event, events or an exitCode to match")
        for key, event in _event_fields(policy):
            if event not in EVENTS:
                yield Problem(
                    field(*here, *key), f"unknown event {shown(event)} (known: {', '.join(EVENTS)})"
                )
            elif event in seen_events and seen_events[event] != index:
                yield Problem(
                    field(*here, *key),
                    f"event {event} is already handled by {field(*at, seen_events[event])}",
                )
            else:
                seen_events[event] = index
        if policy.exit_code is not None:
            yield from _exit_code(policy.exit_code, seen_codes, index, at)
        if policy.action not in ACTIONS:
            yield Problem(
                field(*here, "action"),
                f"must be one of {', '.join(ACTIONS)}, got {shown(policy.action)}",
            )
        yield from _timeout(policy, warnings, here)
    if Event.ANY in seen_events and len(seen_events) > 1:
        yield Problem(field(*at), "'*' matches every event: no other event may be listed beside it")


def _event_fields(policy: LifecyclePolicy) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if policy.event:
        yield ("event",), policy.event
    for index, event in enumerate(policy.events):
        yield ("events", index), event


def _exit_code(
    code: int, seen: dict[int, int], index: int, at: tuple[str | int, ...]
) -> Iterator[Problem]:
    where = field(*at, index, "exitCode")
    if code == 0:
        yield Problem(where, "0 means success: give the non-zero code to act on")
    elif abs(code) > INT32:
        yield Problem(where, f"must be a 32-bit integer, got {shown(code)}")
    elif code in seen:
        yield Problem(where, f"exit code {code} is already handled by {field(*at, seen[code])}")
    else:
        seen[code] = index


def _timeout(
    policy: LifecyclePolicy, warnings: list[str], here: tuple[str | int, ...]
) -> Iterator[Problem]:
    pending = Event.POD_PENDING in policy.all_events
    if policy.timeout is None:
        if pending and len(set(policy.all_events)) == 1:
            yield Problem(field(*here, "timeout"), "required with PodPending: how long to wait")
        elif pending:  # acts on its other events (as Volcano's does), never on PodPending
            warnings.append(
                f"{field(*here, 'timeout')}: without it PodPending never matches this policy"
            )
        return
    try:
        seconds = parse_duration(policy.timeout)
    except ValueError:
        yield Problem(
            field(*here, "timeout"),
            f"must be a duration such as 90s or 10m, got {shown(policy.timeout)}",
        )
        return
    if seconds <= 0:
        yield Problem(field(*here, "timeout"), f"must be positive, got {shown(policy.timeout)}")
    elif not pending:
        warnings.append(
            f"{field(*here, 'timeout')}: Lahar waits only on PodPending; this policy acts at once"
        )
