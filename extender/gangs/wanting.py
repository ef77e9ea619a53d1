"""Which gangs want nodes from an autoscaler, as the fair order's walk says, and admitting those
the nodes were bought for. Pure; over the ledger's public methods, its book of what was asked
(`Gangs.scale_ups`, `gangs.scale_up`) kept up to date.

`want_nodes` reads every turn of the walk (past the point where nothing fits too: a full cluster
is where nodes are wanted most), once per walk, and only when some queue's mode is not `none`.
The refusal of every waiting gang in a queue that buys nodes is remembered as the walk has it
now, so a gang its queue refuses since asks for nothing more (and its PodGroup, explain and the
provisioner say so). A gang refused for want of capacity in such a queue wants nodes; in a queue
whose mode is `unschedulable` it is *shown*: the ledger's `let_in` lets its held members go to
the scheduler, to be refused there and marked Unschedulable (a gate lifted cannot be put back:
those stay in the scheduler's queue).

`admit_provisioned` admits, ahead of the fair order, the gangs whose ProvisioningRequest is
Provisioned, the longest provisioned first, each once it fits (Cluster Autoscaler says
Provisioned when it has asked for the nodes, before they are there), while they still wait for
capacity in a queue whose mode is still `provisioningRequest`. The waker asks it before the fair
order lets any held gang in, so the gang the nodes were bought for has them first.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.api.scale_up import Mode
from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.gangs.events import GangShown
from extender.gangs.ledger import Gangs
from extender.gangs.members import view_gang
from extender.gangs.scale_up import queue_mode, queue_modes, wants_nodes


def want_nodes(gangs: Gangs, state: ClusterState, nodes: Mapping[str, NodeInfo]) -> list[str]:
    """The gangs that wait for capacity the cluster lacks in a queue whose scale-up mode is not
    `none`, in the fair order (see the module's docstring); the book's shown gangs set to the
    ones among them in an `unschedulable` queue."""
    book = gangs.scale_ups
    default = gangs.settings.scale_up.default
    modes = queue_modes(state.queues, default)
    if default is Mode.NONE and all(mode is Mode.NONE for mode in modes.values()):
        book.shown = set()
        return []
    order = gangs.order(state, nodes)
    if book.read is not None and book.read[0] == order.number:
        return list(book.read[1])  # (the same walk: the same answer)
    wanting: list[str] = []
    shown: set[str] = set()
    for key, turn in order.turns.items():
        if turn.rejection is None or turn.slots:
            continue
        gang = view_gang(state, key)
        mode = modes.get(gang.queue, default)
        if mode is Mode.NONE or gang.group is None:
            continue
        gangs.refused_anew(key, turn.rejection, order.number)
        if not wants_nodes(turn.rejection.cause):
            continue
        wanting.append(key)
        if mode is Mode.UNSCHEDULABLE:
            shown.add(key)
    newly, book.shown = shown - book.shown, shown
    for key in sorted(newly):
        gangs.events.publish(GangShown(key))
    book.read = (order.number, tuple(wanting))
    return wanting


def admit_provisioned(
    gangs: Gangs, state: ClusterState, nodes: Mapping[str, NodeInfo]
) -> list[str]:
    """Admit the gangs whose ProvisioningRequest is Provisioned onto the new capacity (see the
    module's docstring); the keys admitted."""
    admitted: list[str] = []
    default = gangs.settings.scale_up.default
    for key in gangs.scale_ups.provisioned():
        if gangs.admission(key) is not None:
            continue
        gang = view_gang(state, key)
        if gang.group is None or gang.stands or not gang.pending:
            continue
        # Still what it was bought for: waiting for capacity (not refused by its queue since,
        # as the last walk says), in a queue that still asks for nodes so.
        refusal = gangs.refusal(key)
        if refusal is not None and not wants_nodes(refusal.rejection.cause):
            continue
        if queue_mode(state.queues, gang.queue, default)[0] is not Mode.PROVISIONING_REQUEST:
            continue
        if gangs.admit_ahead(state, nodes, gang) is None:
            admitted.append(key)
    return admitted
