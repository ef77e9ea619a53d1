"""Why a gang waits, as a value: a `Rejection` is a short `Cause` (the `cause` label of the
rejection metric, what a PodGroup's condition reason is made from) and the message a user reads;
a `Deferred` one works its words out only when read, since a walk refuses hundreds of gangs and is
asked why of a few; a `Refusal` is the record the ledger keeps of a gang refused (since when, why,
in which order), which the contenders read. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class Cause(StrEnum):
    """Why a gang waits, in one word: the `cause` label of `lahar_gang_rejections_total`, and what
    the PodGroup's Unschedulable condition reason is made from (`server.group_status`)."""

    NO_POD_GROUP = "NoPodGroup"  # its pods name a PodGroup that does not exist
    INVALID_GROUP = "InvalidPodGroup"  # its PodGroup, or a pod's naming of it, cannot be taken
    BACKING_OFF = "BackingOff"  # its members did not all come to bind in time
    NOT_ENOUGH_PODS = "NotEnoughPods"  # fewer pods than minMember exist
    NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"  # a task lacks its minTaskMember
    MIN_RESOURCES = "MinResources"  # minResources does not fit
    NOT_ENOUGH_RESOURCES = "NotEnoughResources"  # its members do not fit at once
    QUEUE_CLOSED = "QueueClosed"  # its queue is closed or closing
    NO_QUEUE = "NoQueue"  # its queue does not exist
    QUEUE_NOT_LEAF = "QueueNotLeaf"  # its queue has child queues (gangs go in leaf queues)
    QUEUE_CAPABILITY = "QueueCapability"  # it would take its queue past its capability
    QUEUED = "Queued"  # gangs ahead of it in the fair order claim what it needs


def backoff_refusal(
    key: str, backoff_ends: float | None, now: float, backoff: float
) -> Rejection | None:
    """Why gang `key` waits while it backs off (until `backoff_ends`); None: it does not."""
    if backoff_ends is not None and backoff_ends > now:
        return Rejection(
            Cause.BACKING_OFF,
            f"gang {key}: backing off {backoff:.0f}s because its members did not all come to "
            "bind in time",
        )
    return None


# Refused for want of capacity (not for a rule): what evicting someone could help.
WANTS_CAPACITY = frozenset({Cause.NOT_ENOUGH_RESOURCES, Cause.MIN_RESOURCES})


@dataclass(frozen=True)
class Rejection:
    """Why a gang is not admitted: `cause` is a short class (metrics), `message` the full reason."""

    cause: Cause
    message: str

    def settled(self) -> Rejection:
        """This refusal as a plain value (a `Deferred` one worked out)."""
        return self


class Deferred(Rejection):
    """A refusal worked out when first read, by `work` (a walk refuses hundreds of gangs and is
    asked why of a few); `cause`, when given, is known at once: reading it works nothing out.
    Otherwise reading the cause runs `work`, and takes the cause of what it made: a `Deferred`
    whose cause is known says it without working out its words (a preemption pass reads the
    cause of every refusal, and the words of none)."""

    _work: Callable[[], Rejection] | None
    _made: Rejection | None

    def __init__(self, work: Callable[[], Rejection], cause: Cause | None = None) -> None:
        object.__setattr__(self, "_work", work)
        object.__setattr__(self, "_made", None)
        if cause is not None:
            object.__setattr__(self, "cause", cause)

    def __getattr__(self, name: str) -> str:
        # (read only while the field is not set yet)
        if name == "cause":
            cause = self._made_now().cause
            object.__setattr__(self, "cause", cause)
            return cause
        if name == "message":
            return self.settled().message
        raise AttributeError(name)

    def _made_now(self) -> Rejection:
        made = self._made
        if made is None:
            assert self._work is not None  # (only dropped once settled)
            made = self._work()
            object.__setattr__(self, "_made", made)
        return made

    def settled(self) -> Rejection:
        if "message" not in self.__dict__:
            done = self._made_now().settled()
            object.__setattr__(self, "cause", done.cause)
            object.__setattr__(self, "message", done.message)
            object.__setattr__(self, "_work", None)  # (what it read is not kept alive)
            object.__setattr__(self, "_made", None)
        return Rejection(self.cause, self.message)


@dataclass(frozen=True)
class Refusal:
    """A gang that was refused: since when, why, and the order it was refused in (if it was
    ordered): while that order stands the answer is the same, without looking at the gang again."""

    since: float
    rejection: Rejection
    refused_in: int | None = None
