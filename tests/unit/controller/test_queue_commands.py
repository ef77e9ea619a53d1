"""Commands aimed at a Queue (`vcctl queue operate --action open|close`): which Commands are a
Queue's, what each action does to a queue in each state and under closed parents, how the store
hands them over, and the writes one performed Command makes (against a stand-in for the API)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.batch import Command
from extender.api.scheduling import API_VERSION, Queue
from extender.controller import queue_commands
from extender.controller.queue_commands import (
    CLOSE_QUEUE,
    OPEN_QUEUE,
    QueueCommandRunner,
    QueueCommands,
    QueueRef,
    decide,
    involved,
    queue_target,
)
from extender.controller.store import JobStore
from extender.kube import KubeError
from tests.builders import make_queue

QUEUE_REF = {"apiVersion": API_VERSION, "kind": "Queue", "name": "q", "uid": "u-q"}
JOB_REF = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u-j"}


def command(
    action: str = CLOSE_QUEUE,
    *,
    name: str = "q-closequeue-x1",
    uid: str = "u-c",
    target: dict[str, Any] | None = QUEUE_REF,
    owners: list[dict[str, Any]] | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> Command:
    """A Command as `vcctl queue operate` writes it: in namespace default, its target and its
    owner reference the Queue (controller, blockOwnerDeletion)."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "uid": uid,
        "creationTimestamp": created,
        "ownerReferences": owners if owners is not None else [QUEUE_REF | {"controller": True}],
    }
    body: dict[str, Any] = {"metadata": meta, "action": action}
    if target is not None:
        body["target"] = target | {"controller": True, "blockOwnerDeletion": True}
    return Command.model_validate(body)


def queue(name: str = "q", state: str = "", parent: str = "", uid: str = "") -> Queue:
    built = make_queue(name).set("metadata.uid", uid or f"u-{name}")
    if state:
        built = built.state(state)
    if parent:
        built = built.parent(parent)
    return built.model()


# -- which Commands are a Queue's ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "owners", "expected"),
    [
        (QUEUE_REF, None, QueueRef("q", "u-q")),
        (None, [QUEUE_REF], QueueRef("q", "u-q")),
        (QUEUE_REF | {"apiVersion": "scheduling.volcano.sh/v1"}, None, QueueRef("q", "u-q")),
        (JOB_REF, [JOB_REF], None),
        (JOB_REF, [QUEUE_REF], None),
        (QUEUE_REF | {"apiVersion": "other.example.com/v1"}, None, None),
        (QUEUE_REF | {"name": ""}, None, None),
        (None, [], None),
    ],
    ids=[
        "target",
        "owner reference without a target",
        "any version of the group",
        "a job's",
        "the target decides over owners",
        "another group's Queue",
        "no name",
        "nothing named",
    ],
)
def test_queue_target(
    target: dict[str, Any] | None, owners: list[dict[str, Any]] | None, expected: QueueRef | None
) -> None:
    assert queue_target(command(target=target, owners=owners)) == expected


# -- what an action does ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "state", "above", "written", "event"),
    [
        (CLOSE_QUEUE, "Open", [], "Closing", "Normal"),
        (CLOSE_QUEUE, "", [], "Closing", "Normal"),
        (CLOSE_QUEUE, "Unknown", [], "Closing", "Normal"),
        (CLOSE_QUEUE, "Closing", [], None, None),
        (CLOSE_QUEUE, "Closed", [], None, None),
        (CLOSE_QUEUE, "Open", [queue("p", "Closed")], "Closing", "Normal"),
        (OPEN_QUEUE, "Closed", [], "Open", "Normal"),
        (OPEN_QUEUE, "Closing", [], "Open", "Normal"),
        (OPEN_QUEUE, "Open", [], None, None),
        (OPEN_QUEUE, "", [], None, None),
        (OPEN_QUEUE, "Closed", [queue("p", "Open")], "Open", "Normal"),
        (OPEN_QUEUE, "Closed", [queue("p", "Closing")], None, "Warning"),
        (OPEN_QUEUE, "Open", [queue("p"), queue("g", "Closed")], None, "Warning"),
    ],
    ids=[
        "close an open queue: Closing",
        "close a queue with no state: Closing",
        "close an Unknown queue: Closing",
        "close a Closing queue: left",
        "close a Closed queue: left",
        "close under a closed parent: Closing",
        "open a Closed queue",
        "open a Closing queue",
        "open an Open queue: left",
        "open a queue with no state: left",
        "open under an open parent",
        "open under a Closing parent: refused",
        "open under a Closed grandparent: refused",
    ],
)
def test_decide(
    action: str, state: str, above: list[Queue], written: str | None, event: str | None
) -> None:
    decision = decide(action, QueueRef("q", "u-q"), queue("q", state, parent="p"), above)
    assert decision.state == written
    assert (decision.event[0] if decision.event else None) == event
    assert decision.refused is (event == "Warning")


@pytest.mark.parametrize(
    ("action", "ref", "found", "said"),
    [
        ("SyncQueue", QueueRef("q"), queue(), "unknown action 'SyncQueue'"),
        ("", QueueRef("q"), queue(), "unknown action ''"),
        (OPEN_QUEUE, QueueRef("q", "u-q"), None, "Queue q does not exist"),
        (CLOSE_QUEUE, QueueRef("q", "u-old"), queue(), "earlier Queue q (uid u-old, now u-q)"),
    ],
    ids=["unknown action", "no action", "no such queue", "an earlier queue of that name"],
)
def test_commands_that_do_nothing_but_are_told(
    action: str, ref: QueueRef, found: Queue | None, said: str
) -> None:
    decision = decide(action, ref, found)
    assert (decision.state, decision.event, decision.refused) == (None, None, True)
    assert said in decision.said


def test_a_command_without_a_uid_takes_the_queue_of_that_name() -> None:
    assert decide(CLOSE_QUEUE, QueueRef("q"), queue()).state == "Closing"


def test_the_root_queue_is_never_closed() -> None:
    decision = decide(CLOSE_QUEUE, QueueRef("root"), queue("root"))
    assert decision.state is None and decision.refused
    assert decision.event == ("Warning", "not closed: the root queue is never closed")


# -- the store hands Queue Commands over --------------------------------------------------------


def test_the_store_hands_queue_commands_over_and_keeps_job_ones() -> None:
    store = JobStore()
    poked: list[str] = []
    store.queue_commands.on_change = poked.append
    closing = command()
    for_job = command("AbortJob", name="j-abortjob-x", uid="u-j", target=JOB_REF, owners=[])
    store.replace_commands([closing, for_job])
    assert store.queue_commands.pending == {"default/q-closequeue-x1": closing}
    assert set(store.commands) == {"default/j"} and poked == ["default/q-closequeue-x1"]
    opening = command(OPEN_QUEUE, name="q-openqueue-x2", uid="u-o")
    store.upsert_command(opening)
    assert list(store.queue_commands.pending) == [
        "default/q-closequeue-x1",
        "default/q-openqueue-x2",
    ]
    store.delete_command(closing)
    assert list(store.queue_commands.pending) == ["default/q-openqueue-x2"]


def test_a_full_list_queues_the_oldest_first() -> None:
    commands = QueueCommands()
    poked: list[str] = []
    commands.on_change = poked.append
    late = command(name="late", uid="u-late", created="2026-01-01T00:00:09Z")
    early = command(OPEN_QUEUE, name="early", uid="u-early", created="2026-01-01T00:00:01Z")
    commands.replace([late, early])
    assert poked == ["default/early", "default/late"]


def test_a_performed_command_is_not_taken_again_until_its_deletion_is_seen() -> None:
    commands = QueueCommands()
    closing = command()
    commands.upsert(closing)
    commands.performed(closing)
    commands.upsert(closing)  # a late watch event of the Command being deleted
    commands.replace([closing])  # a list made before the deletion
    assert commands.pending == {}
    commands.delete(closing)
    again = command(uid="u-new")  # a new Command of that name
    commands.upsert(again)
    assert commands.pending == {"default/q-closequeue-x1": again}


# -- the writes of one performed Command ----------------------------------------------------------


@dataclass
class FakeApi:
    """The calls `QueueCommandRunner` makes, against queues held here."""

    queues: dict[str, Queue] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def get(self, api: object, api_version: str, kind: str, namespace: str, name: str) -> Any:
        found = self.queues.get(name)
        return None if found is None else found.model_dump(by_alias=True, exclude_none=True)

    def patch(self, api: object, name: str, status: dict[str, Any]) -> bool:
        self.calls.append(("patch", name, status["state"]))
        return True

    def record(
        self, api: object, involved: dict[str, str], kind: str, reason: str, message: str
    ) -> None:
        self.events.append({"involvedObject": involved, "type": kind, "reason": reason})
        self.calls.append(("event", involved["name"], reason))

    def delete(
        self, api: object, api_version: str, kind: str, namespace: str, name: str, *, uid: str
    ) -> bool:
        self.calls.append(("delete", f"{namespace}/{name}", uid))
        return True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    api = FakeApi()

    class Writes:
        get = staticmethod(api.get)
        delete = staticmethod(api.delete)

    monkeypatch.setattr(queue_commands, "writes", Writes)
    monkeypatch.setattr(queue_commands, "patch_queue_status", api.patch)
    monkeypatch.setattr(queue_commands, "record_event", api.record)
    return api


def perform(commands: QueueCommands, key: str) -> None:
    asyncio.run(QueueCommandRunner(k8s.ApiClient(), commands)(key))


@pytest.mark.parametrize(
    ("queues", "sent", "calls"),
    [
        (
            [queue("q", "Open")],
            command(),
            [
                ("patch", "q", "Closing"),
                ("event", "q", "CloseQueue"),
                ("delete", "default/q-closequeue-x1", "u-c"),
            ],
        ),
        (
            [queue("q", "Closed", parent="p"), queue("p", "Closed")],
            command(OPEN_QUEUE),
            [("event", "q", "OpenQueue"), ("delete", "default/q-closequeue-x1", "u-c")],
        ),
        ([queue("q", "Closing")], command(), [("delete", "default/q-closequeue-x1", "u-c")]),
        ([], command(), [("delete", "default/q-closequeue-x1", "u-c")]),
        ([queue("q", uid="u-new")], command(), [("delete", "default/q-closequeue-x1", "u-c")]),
        ([queue("q")], command("Bogus"), [("delete", "default/q-closequeue-x1", "u-c")]),
    ],
    ids=[
        "closed: state, event, deleted",
        "refused under a closed parent: warning event, deleted",
        "already closing: deleted",
        "no such queue: deleted",
        "an earlier queue: deleted",
        "unknown action: deleted",
    ],
)
def test_one_command_performed(
    fake: FakeApi, queues: list[Queue], sent: Command, calls: list[tuple[str, ...]]
) -> None:
    fake.queues = {q.metadata.name: q for q in queues}
    commands = QueueCommands()
    commands.upsert(sent)
    perform(commands, sent.metadata.key)
    assert fake.calls == calls
    assert commands.pending == {}


def test_a_command_not_pending_does_nothing(fake: FakeApi) -> None:
    perform(QueueCommands(), "default/gone")
    assert fake.calls == []


def test_a_failed_write_leaves_the_command_for_a_retry(
    fake: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(api: object, name: str, status: dict[str, Any]) -> bool:
        raise KubeError("writing status of Queue q: 503")

    monkeypatch.setattr(queue_commands, "patch_queue_status", refused)
    fake.queues = {"q": queue("q", "Open")}
    commands = QueueCommands()
    commands.upsert(command())
    with pytest.raises(KubeError):
        perform(commands, "default/q-closequeue-x1")
    assert list(commands.pending) == ["default/q-closequeue-x1"]


def test_the_event_is_about_the_cluster_scoped_queue() -> None:
    """Its involved object has no namespace: `kube.reports.record_event` then records it in
    namespace default, as client-go records an Event about a cluster-scoped object, which is
    where `kubectl describe queue` looks."""
    assert involved(queue("q")) == {
        "apiVersion": API_VERSION,
        "kind": "Queue",
        "name": "q",
        "uid": "u-q",
    }
