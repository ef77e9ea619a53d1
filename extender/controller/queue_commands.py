"""Volcano's Commands aimed at a Queue (`vcctl queue operate --action open|close`): each performed
once, then deleted, as Commands aimed at a Job are.

The job store (`store.JobStore`) receives every Command; those whose `target` is a Queue of
`scheduling.volcano.sh` (or, lacking a `target`, whose owner reference is) it hands to
`QueueCommands`, where they wait on the event loop for a worker of their own work queue. The
worker (`QueueCommandRunner`) reads the Queue and the queues above it from the API server rather
than from a cache (vcctl reads the Queue a moment before it writes the Command, and a cache could
lag behind that), decides in pure code (`decide`), then, in a worker thread, writes the Queue's
`status.state`, records an Event on the Queue (reason `OpenQueue` or `CloseQueue`, as Volcano)
and deletes the Command by uid. A Command already performed is not taken again while its deletion
is on its way through the watch.

- `OpenQueue` writes `Open`. While a queue above it is Closing or Closed it is refused, with a
  Warning Event saying to open that one first: Volcano refuses it in the same case.
- `CloseQueue` writes `Closing`; Lahar's extender (`server.queue_status`) makes it `Closed` once
  none of its PodGroups, nor any of the queues under it, is unfinished: Volcano's closing state.
  A queue Closing or Closed already is left as it is. The root queue is never closed (Volcano
  refuses it too).
- The queues under a closed queue are not written. Lahar's scheduler and webhook count a queue
  under a queue that is not Open as taking no new work (`gangs.queues.QueueView.closed_by`,
  `admission.queues.queue_problems`), which is what Volcano's controller gets by closing each
  child and marking it `volcano.sh/closed-by-parent`; and when the parent opens, exactly the
  children that were not closed themselves take work again, as Volcano reopens only the marked
  ones. What differs is what the children show: their own state (`vcctl queue list` shows an
  Open child under a Closed parent where Volcano shows it Closed).
- The state is written without a precondition: the Command asks for it whatever the Queue's
  version. The extender writes `state` only onto the version of the Queue it derived it from
  (`server.queue_writer`), so it never overwrites this one, and it keeps a state set to Open,
  Closing or Closed (`server.queue_status`).
- An unknown action, a Queue that does not exist, or another Queue of that name (the Command's
  uid is not the Queue's: deleted and created again since) is a WARNING in the log: nothing is
  written, and the Command is deleted. Queue Commands are not filtered by scheduler name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubernetes import client as k8s

from extender.api.batch import BUS_API_VERSION, Command
from extender.api.log_fields import about_queue
from extender.api.scheduling import API_VERSION, CLOSED, CLOSING, OPEN, ROOT, Queue
from extender.kube import KubeError, patch_queue_status, writes
from extender.kube.reports import record_event

log = logging.getLogger(__name__)

GROUP = API_VERSION.split("/", maxsplit=1)[0]  # scheduling.volcano.sh
OPEN_QUEUE, CLOSE_QUEUE = "OpenQueue", "CloseQueue"
MAX_DEPTH = 64  # queues read above a queue at most (the webhook allows 5 levels; a loop stops here)


@dataclass(frozen=True)
class QueueRef:
    """The Queue a Command is for: its name, and its uid when the Command names one."""

    name: str
    uid: str = ""


def _is_queue(api_version: str, kind: str) -> bool:
    return kind == "Queue" and api_version.split("/", maxsplit=1)[0] == GROUP


def queue_target(command: Command) -> QueueRef | None:
    """The Queue `command` is for: its `target`, or with none, an owner reference to a Queue;
    None when it is for anything else (a Job)."""
    target = command.target
    if target is not None:
        if _is_queue(target.api_version, target.kind) and target.name:
            return QueueRef(target.name, target.uid)
        return None
    for owner in command.metadata.owner_references:
        if _is_queue(owner.api_version, owner.kind) and owner.name:
            return QueueRef(owner.name, owner.uid)
    return None


@dataclass(frozen=True)
class Decision:
    """What one Queue Command does: the state to write (None: nothing), the Event to record on
    the Queue (type and message; None: none), and what the log says, at WARNING when `refused`."""

    state: str | None
    event: tuple[str, str] | None
    said: str
    refused: bool = False


def decide(
    action: str, ref: QueueRef, queue: Queue | None, above: Sequence[Queue] = ()
) -> Decision:
    """What `action` does to Queue `queue` (None: there is none), read with the queues `above`
    it, the nearest first."""
    if action not in (OPEN_QUEUE, CLOSE_QUEUE):
        return Decision(None, None, f"asks for unknown action {action!r}", refused=True)
    if queue is None:
        return Decision(None, None, f"Queue {ref.name} does not exist", refused=True)
    if ref.uid and ref.uid != queue.metadata.uid:
        said = f"is for an earlier Queue {ref.name} (uid {ref.uid}, now {queue.metadata.uid})"
        return Decision(None, None, said, refused=True)
    return _open(queue, above) if action == OPEN_QUEUE else _close(queue)


def _open(queue: Queue, above: Sequence[Queue]) -> Decision:
    state = queue.status.state or OPEN
    closed = next((q for q in above if not q.open), None)
    if closed is not None:
        said = (
            f"not opened: queue {closed.metadata.name} above it is {closed.status.state}; "
            "open it first"
        )
        return Decision(None, ("Warning", said), said, refused=True)
    if state == OPEN:
        return Decision(None, None, "already Open")
    return Decision(OPEN, ("Normal", f"{state} -> Open"), f"{state} -> Open")


def _close(queue: Queue) -> Decision:
    state = queue.status.state or OPEN
    if queue.metadata.name == ROOT:
        said = "not closed: the root queue is never closed"
        return Decision(None, ("Warning", said), said, refused=True)
    if state in (CLOSING, CLOSED):
        return Decision(None, None, f"already {state}")
    said = f"{state} -> Closing (Closed once none of its PodGroups is unfinished)"
    return Decision(CLOSING, ("Normal", said), said)


class QueueCommands:
    """The Queue Commands not performed yet, by `namespace/name`; touched only on the event loop.
    `on_change(key)` is told of each one that arrives."""

    def __init__(self) -> None:
        self.pending: dict[str, Command] = {}
        self.on_change: Callable[[str], None] = lambda key: None
        self._performed: set[str] = set()  # uids deleted by this controller, until watched gone

    def replace(self, commands: list[Command]) -> None:
        """A full list: the oldest Command is queued first, as they were made."""
        listed = {command.metadata.uid for command in commands}
        self._performed &= listed
        made = sorted(
            commands, key=lambda c: (c.metadata.creation_timestamp or "", c.metadata.name)
        )
        self.pending = {
            command.metadata.key: command
            for command in made
            if command.metadata.uid not in self._performed
        }
        for key in self.pending:
            self.on_change(key)

    def upsert(self, command: Command) -> None:
        if command.metadata.uid in self._performed:
            return
        self.pending[command.metadata.key] = command
        self.on_change(command.metadata.key)

    def delete(self, command: Command) -> None:
        self._performed.discard(command.metadata.uid)
        self._drop(command)

    def performed(self, command: Command) -> None:
        """`command` was performed and deleted: never taken again, even if a late watch event
        still shows it."""
        self._performed.add(command.metadata.uid)
        self._drop(command)

    def _drop(self, command: Command) -> None:
        key = command.metadata.key
        known = self.pending.get(key)
        if known is not None and known.metadata.uid == command.metadata.uid:
            del self.pending[key]


def _read_queue(api: k8s.ApiClient, name: str) -> Queue | None:
    found = writes.get(api, API_VERSION, "Queue", "", name)
    return None if found is None else Queue.model_validate(found)


def _above(api: k8s.ApiClient, queue: Queue) -> list[Queue]:
    """The queues above `queue`, the nearest first, up to (without) root; a parent missing, or a
    loop, ends the walk (the webhook refuses both; the scheduler puts such a queue at the top)."""
    found: list[Queue] = []
    seen = {queue.metadata.name}
    parent = queue.spec.parent
    while parent and parent != ROOT and parent not in seen and len(found) < MAX_DEPTH:
        seen.add(parent)
        above = _read_queue(api, parent)
        if above is None:
            break
        found.append(above)
        parent = above.spec.parent
    return found


class QueueCommandRunner:
    """Performs one Queue Command per call, by key (a work queue's handler)."""

    def __init__(self, api: k8s.ApiClient, commands: QueueCommands) -> None:
        self.api, self.commands = api, commands

    async def __call__(self, key: str) -> float | None:
        command = self.commands.pending.get(key)
        if command is None:
            return None
        await asyncio.to_thread(self.perform, command)
        self.commands.performed(command)
        return None

    def perform(self, command: Command) -> None:
        """Read, decide, write, delete (in a worker thread: every call blocks)."""
        ref = queue_target(command)
        if ref is None:  # (the store hands over only Queue Commands)
            return
        queue, above = None, []
        if command.action in (OPEN_QUEUE, CLOSE_QUEUE):
            queue = _read_queue(self.api, ref.name)
            above = [] if queue is None else _above(self.api, queue)
        decision = decide(command.action, ref, queue, above)
        if queue is not None and decision.state is not None:
            patch_queue_status(self.api, ref.name, {"state": decision.state})
        meta = command.metadata
        level = logging.WARNING if decision.refused else logging.INFO
        log.log(
            level,
            "Queue %s: %s (Command %s, %s)",
            ref.name,
            decision.said,
            meta.key,
            command.action or "no action",
            extra=about_queue(ref.name),
        )
        if queue is not None and decision.event is not None:
            kind, message = decision.event
            self._event(queue, kind, command.action, f"{message} (Command {meta.key})")
        writes.delete(self.api, BUS_API_VERSION, "Command", meta.namespace, meta.name, uid=meta.uid)

    def _event(self, queue: Queue, kind: str, reason: str, message: str) -> None:
        try:
            record_event(self.api, involved(queue), kind, reason, message)
        except KubeError as error:
            log.warning(
                "Queue %s: could not record event %s: %s",
                queue.metadata.name,
                reason,
                error,
                extra=about_queue(queue.metadata.name),
            )


def involved(queue: Queue) -> dict[str, str]:
    """The involved object of an Event about the cluster-scoped `queue` (no namespace)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Queue",
        "name": queue.metadata.name,
        "uid": queue.metadata.uid,
    }
