"""Lahar's own preemption and reclaim: for the most deserving gang that cannot fit, whom to evict.

kube-scheduler's preemption cannot help a gang: its dry run uses only in-tree filters (resource fit
is Lahar's) and knows nothing of gangs or queues. So Lahar decides itself, like Volcano's preempt
and reclaim actions: `next_preemption` goes through the waiting gangs in the fair order and, for
the first one refused for lack of capacity, picks the fewest whole victim gangs (or spare
members) that let its whole gang fit (`framework.victims`). The server evicts them and reports.
Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.framework.gang import Gangs, gang_priority
from extender.framework.members import GangView, view_gang
from extender.framework.placement import choose as choose_members
from extender.framework.victims import Rules, Unit, choose, eligible, units_of

WANTS_CAPACITY = frozenset({"NotEnoughResources", "MinResources"})


@dataclass(frozen=True)
class Preemption:
    preemptor: GangView
    victims: list[Unit]

    @property
    def message(self) -> str:
        names = ", ".join(
            unit.key if unit.whole else f"{unit.pods[0][0].key} of {unit.key}"
            for unit in self.victims
        )
        pods = sum(len(unit.pods) for unit in self.victims)
        return f"evicting {pods} pods ({names}) so that gang {self.preemptor.key} fits whole"


def next_preemption(
    state: ClusterState,
    gangs: Gangs,
    nodes: Mapping[str, NodeInfo],
    rules: Rules,
    *,
    skip: Collection[str] = (),
) -> Preemption | None:
    """The first waiting gang in the fair order that lacks capacity and has valid victims."""
    order = gangs.order(state, nodes)
    running: list[tuple[GangView, int]] | None = None
    for key, turn in order.turns.items():
        if key in skip or turn.rejection is None or turn.rejection.cause not in WANTS_CAPACITY:
            continue
        gang = view_gang(state, key)
        if not gang.pending:
            continue
        if running is None:
            running = [
                (view, gang_priority(state, view))
                for view in (view_gang(state, k) for k in state.pod_groups)
                if view.placed
            ]
        node_of = {
            pod.metadata.uid: state.placed_on(pod.metadata.uid) or ""
            for view, _ in running
            for pod in view.placed
        }
        units = [
            unit
            for view, priority in running
            if view.key != key and view.key not in gangs.admissions
            for unit in units_of(view, priority, node_of)
        ]
        allowed = eligible(units, gang.queue, gang_priority(state, gang), order.queues, rules)
        members, _ = choose_members(gang)
        victims = choose(
            members,
            allowed,
            nodes,
            gangs.reserved(),
            queues=order.queues,
            preemptor_queue=gang.queue,
        )
        if victims:
            return Preemption(gang, victims)
    return None
