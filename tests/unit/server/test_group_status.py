"""PodGroup status from the gang: phases, conditions with kept transition times, and events."""

from __future__ import annotations

import pytest

from extender.api.scheduling import PodGroupCondition, PodGroupStatus
from extender.framework.engine import Cause, Rejection, view_gang
from extender.server.group_status import events, group_status, same_status
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod

T0, T1 = "2026-11-23T10:00:00Z", "2026-11-23T10:05:00Z"
NO_ROOM = Rejection(
    Cause.NOT_ENOUGH_RESOURCES, "gang default/g: 2 of 4 members cannot be placed: cpu"
)


def members(*states: str) -> list[PodBuilder]:
    """One member per state: pending, bound, leaving (bound, being deleted), succeeded or
    failed."""
    pods = []
    for index, kind in enumerate(states):
        pod = make_pod(f"g-{index}").cpu("1").group("g")
        if kind in ("bound", "succeeded", "failed"):
            pod = pod.on("n1")
        if kind in ("bound", "leaving"):
            pod = pod.on("n1").phase("Running")
        if kind == "leaving":  # being deleted: it runs until it is gone
            pod = pod.deleting()
        if kind in ("succeeded", "failed"):
            pod = pod.phase(kind.capitalize())
        pods.append(pod)
    return pods


def status_of(
    states: tuple[str, ...],
    *,
    min_member: int = 2,
    admitted: bool = False,
    rejection: Rejection | None = None,
    previous: PodGroupStatus | None = None,
    shown: bool = False,
) -> PodGroupStatus:
    state = cluster([make_node("n1").cpu("16")], members(*states))
    state.upsert_pod_group(make_group("g").min_member(min_member).model())
    return group_status(
        view_gang(state, "default/g"),
        admitted=admitted,
        rejection=rejection,
        previous=previous or PodGroupStatus(),
        now=T1,
        shown=shown,
    )


@pytest.mark.parametrize(
    ("states", "admitted", "rejection", "phase", "counts"),
    [
        (("pending", "pending"), False, None, "Pending", (0, 0, 0)),
        (("pending", "pending"), False, NO_ROOM, "Pending", (0, 0, 0)),
        (("pending", "pending"), True, None, "Inqueue", (0, 0, 0)),
        (("bound", "pending"), False, None, "Inqueue", (1, 0, 0)),
        (("bound", "bound", "pending"), False, None, "Running", (2, 0, 0)),
        # A member being evicted still runs: the phase stays Running (the gang no longer stands
        # on it for admission, but the PodGroup reports what runs).
        (("bound", "leaving"), False, None, "Running", (2, 0, 0)),
        (("bound", "succeeded"), False, None, "Running", (1, 1, 0)),
        (("succeeded", "succeeded", "failed"), False, None, "Completed", (0, 2, 1)),
        # Volcano has no Failed phase: Completed, without Scheduled (see the events' test).
        (("succeeded", "failed", "failed"), False, None, "Completed", (0, 1, 2)),
        # A Job completed by its policy: the rest of the gang was deleted, none failed.
        (("succeeded",), False, None, "Completed", (0, 1, 0)),
    ],
)
def test_phase_and_counts_follow_the_members(
    states: tuple[str, ...],
    admitted: bool,
    rejection: Rejection | None,
    phase: str,
    counts: tuple[int, int, int],
) -> None:
    status = status_of(states, admitted=admitted, rejection=rejection)
    assert status.phase == phase
    assert (status.running, status.succeeded, status.failed) == counts


def test_a_waiting_gang_is_unschedulable_with_volcanos_reason_and_lahars_message() -> None:
    status = status_of(("pending", "pending"), rejection=NO_ROOM)
    [condition] = status.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "Unschedulable",
        "True",
        "NotEnoughResources",
    )
    assert condition.message == NO_ROOM.message
    assert condition.last_transition_time == T1
    too_few = Rejection(Cause.NOT_ENOUGH_PODS, "gang default/g: 1/2 pods of gang default/g exist")
    assert status_of(("pending",), rejection=too_few).conditions[0].reason == "NotEnoughTasks"


def test_once_it_stands_the_gang_is_scheduled_and_no_longer_unschedulable() -> None:
    waiting = PodGroupStatus(
        phase="Pending",
        conditions=[
            PodGroupCondition(
                type="Unschedulable", status="True", reason="x", last_transition_time=T0
            )
        ],
    )
    status = status_of(("bound", "bound"), previous=waiting)
    conditions = {c.type: c for c in status.conditions}
    assert conditions["Unschedulable"].status == "False"
    assert conditions["Scheduled"].status == "True"
    assert conditions["Scheduled"].message == "2 of 2 required members bound or done"
    assert all(c.last_transition_time == T1 for c in status.conditions)


def test_an_unchanged_condition_keeps_its_transition_time() -> None:
    first = status_of(("pending", "pending"), rejection=NO_ROOM)
    earlier = first.model_copy(
        update={"conditions": [first.conditions[0].model_copy(update={"last_transition_time": T0})]}
    )
    again = status_of(("pending", "pending"), rejection=NO_ROOM, previous=earlier)
    assert again.conditions[0].last_transition_time == T0
    assert same_status(again, first)  # timestamps aside, nothing to write


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (("pending", "pending"), ("bound", "bound"), [("Normal", "Scheduled")]),
        (("bound", "bound"), ("succeeded", "succeeded"), [("Normal", "Completed")]),
        (("bound", "bound"), ("failed", "succeeded"), [("Warning", "Failed")]),
        (("bound", "bound"), ("bound", "bound"), []),
    ],
)
def test_events_follow_phase_changes_once(
    before: tuple[str, ...], after: tuple[str, ...], expected: list[tuple[str, str]]
) -> None:
    old, new = status_of(before), status_of(after, previous=status_of(before))
    assert [(e.type, e.reason) for e in events(old, new, "default/g")] == expected


def test_admission_and_a_new_rejection_reason_make_events() -> None:
    pending = status_of(("pending", "pending"), rejection=NO_ROOM)
    [unschedulable] = events(PodGroupStatus(), pending, "default/g")
    assert (unschedulable.type, unschedulable.message) == ("Warning", NO_ROOM.message)
    assert events(pending, status_of(("pending", "pending"), rejection=NO_ROOM), "g") == []
    admitted = status_of(("pending", "pending"), admitted=True, previous=pending)
    assert [(e.reason) for e in events(pending, admitted, "default/g")] == ["Admitted"]
    assert admitted.conditions[0].status == "False"


def unschedulable_since(when: str, message: str = NO_ROOM.message) -> PodGroupStatus:
    condition = PodGroupCondition(
        type="Unschedulable",
        status="True",
        reason="NotEnoughResources",
        message=message,
        last_transition_time=when,
    )
    return PodGroupStatus(phase="Pending", conditions=[condition])


def test_without_a_verdict_the_last_condition_stays_as_it_was() -> None:
    """Just after a restart the gang rules have said nothing yet: no false "Admitted"."""
    status = status_of(("pending", "pending"), previous=unschedulable_since(T0))
    assert status == unschedulable_since(T0)


def test_a_missing_pod_group_said_of_the_pods_is_not_written_on_the_group() -> None:
    gone = Rejection(Cause.NO_POD_GROUP, "gang default/g: PodGroup default/g does not exist")
    assert status_of(("pending", "pending"), rejection=gone).conditions == []


def test_a_finished_gang_keeps_its_outcome_when_its_pods_are_deleted() -> None:
    done = status_of(("succeeded", "succeeded"))
    assert done.phase == "Completed"
    assert status_of((), previous=done) == done


def test_new_figures_in_the_same_reason_update_the_message_without_an_event() -> None:
    before = unschedulable_since(T0)
    fewer = Rejection(
        Cause.NOT_ENOUGH_RESOURCES, "gang default/g: 1 of 4 members cannot be placed: cpu"
    )
    after = status_of(("pending", "pending"), rejection=fewer, previous=before)
    assert after.conditions[0].message == fewer.message
    assert after.conditions[0].last_transition_time == T0
    assert events(before, after, "default/g") == []
    other = Rejection(Cause.NOT_ENOUGH_PODS_OF_TASK, "gang default/g: task ps has 0 of the 1 pods")
    changed = status_of(("pending", "pending"), rejection=other, previous=before)
    assert [e.reason for e in events(before, changed, "default/g")] == ["Unschedulable"]


def test_other_writers_conditions_stay_as_they_were() -> None:
    """A controller's own condition, and Volcano's transitionID on one, survive Lahar's writes;
    Lahar's conditions replace only its own."""
    foreign = PodGroupCondition.model_validate(
        {"type": "QuotaChecked", "status": "True", "transitionID": "abc", "reason": "Fits"}
    )
    old = PodGroupCondition(type="Unschedulable", status="True", reason="NotEnoughResources")
    previous = PodGroupStatus(phase="Pending", conditions=[old, foreign])
    status = status_of(("bound", "bound"), previous=previous)
    assert [c.type for c in status.conditions] == ["Unschedulable", "QuotaChecked", "Scheduled"]
    assert status.conditions[0].status == "False"
    assert status.conditions[1] == foreign
    written = status.model_dump(by_alias=True, mode="json")["conditions"][1]
    assert written["transitionID"] == "abc"
    assert same_status(status_of(("bound", "bound"), previous=status), status)


def test_a_gang_whose_queue_is_deleted_while_it_waits_is_unschedulable_for_the_queue() -> None:
    gone = Rejection(
        Cause.NO_QUEUE, "gang default/g: queue q1 does not exist; it waits until it is created"
    )
    waiting = unschedulable_since(T0)
    status = status_of(("pending", "pending"), rejection=gone, previous=waiting)
    [condition] = status.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "Unschedulable",
        "True",
        "NoQueue",
    )
    assert "queue q1 does not exist" in condition.message
    assert condition.last_transition_time == T0  # unschedulable all along: for another reason
    assert status.phase == "Pending"
    [event] = events(waiting, status, "default/g")
    assert (event.type, event.reason, event.message) == ("Warning", "Unschedulable", gone.message)


def test_a_gang_shown_to_the_scheduler_for_nodes_is_inqueue_and_still_unschedulable() -> None:
    """Its Job's controller creates its pods (Inqueue), for an autoscaler to see them marked
    Unschedulable; it is not admitted, so no Admitted event."""
    pending = status_of(("pending", "pending"), rejection=NO_ROOM)
    shown = status_of(("pending", "pending"), rejection=NO_ROOM, shown=True, previous=pending)
    assert shown.phase == "Inqueue"
    assert [(c.type, c.status) for c in shown.conditions] == [("Unschedulable", "True")]
    assert events(pending, shown, "default/g") == []
