"""What happened, as typed events, and the one hub that tells whoever listens.

The cluster state (`cache.state`) says what changed in the cluster as Lahar knows it: capacity
that may have been freed, a PodGroup, the queues, the network topology, a gang's members, a pod
behind a stray gate, a ProvisioningRequest. The engine says what it decided of gangs
(`gangs.events`: admitted, released, rejected, shown to the scheduler). Both publish into one
`Events` hub, which the process that owns them makes and hands to both (the extender's app, the
simulator), and the parts that act on them (the waker, the writers, the provisioner, the
preemption loop, the metrics) subscribe by the event's type: `events.subscribe(GangChanged,
listener)`. An event is a frozen value naming its object, so a listener's type says what it is
told.

Delivery is the hub's one setting. By default a listener runs within `publish`, as the change
happens (the simulator's virtual time and the tests rely on that order). The extender's hub
delivers on the next turn of its event loop instead (`later`), so that a verb call ends with
its decision and what listens to it runs after its reply, and a listener that fails does not
fail the call that made the change.

The same concept one layer up: `gangs.events`, the events of gangs the engine publishes into this
hub.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from extender.api.objects import Pod

E = TypeVar("E")
Deliver = Callable[[Callable[[Any], None], object], None]  # (listener, event): run it, some time


def at_once(listener: Callable[[Any], None], event: object) -> None:
    listener(event)


def later(listener: Callable[[Any], None], event: object) -> None:
    """On the next turn of the running event loop (at once when none runs)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        listener(event)
    else:
        loop.call_soon(listener, event)


class Events:
    def __init__(self, deliver: Deliver = at_once) -> None:
        self._deliver = deliver
        self._listeners: dict[type, list[Callable[[Any], None]]] = {}

    def subscribe(self, kind: type[E], listener: Callable[[E], None]) -> None:
        """Have `listener` told every event of type `kind`, after those subscribed before."""
        self._listeners.setdefault(kind, []).append(listener)

    def publish(self, event: object) -> None:
        """Tell the listeners of the event's type, in the order they subscribed."""
        for listener in self._listeners.get(type(event), ()):
            self._deliver(listener, event)


# -- the cluster state's ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapacityFreed:
    """Capacity may have been freed: a pod stopped counting, or a node appeared or changed."""


@dataclass(frozen=True, slots=True)
class PodGroupChanged:
    """A PodGroup appeared or changed (its key, `namespace/name`)."""

    key: str


@dataclass(frozen=True, slots=True)
class QueuesChanged:
    """What queue status counts read changed: a Queue, or a PodGroup's phase or existence."""


@dataclass(frozen=True, slots=True)
class TopologyChanged:
    """What the network topology resolves to may have changed (`Stamp.topology` moved)."""


@dataclass(frozen=True, slots=True)
class GangChanged:
    """A gang's members changed: one joined or left, or a member's phase or node changed."""

    key: str


@dataclass(frozen=True, slots=True)
class StrayGate:
    """A pod held by Lahar's gate alone names no group Lahar reads (`api.scheduling
    .stray_gate`): nothing else would lift its gate."""

    pod: Pod


@dataclass(frozen=True, slots=True)
class ProvisioningRequestChanged:
    """One of Lahar's ProvisioningRequests appeared, changed or went (its key)."""

    key: str
