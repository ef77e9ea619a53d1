"""After a restart: gangs found partly bound are completed first, or reported.

Lahar's state is rebuilt from the API, so a gang whose bindings were being created when Lahar
stopped shows some members bound and fewer than `minMember` of them. Before any other pod is
filtered, each such gang (closest to standing first) is admitted ahead of every other gang, the
fair order aside, when the rest of it fits the capacity other admitted gangs leave: its pending
members bind as soon as the scheduler retries them (or Lahar lifts their gate). If it does not
fit, it waits like any gang, and the caller reports it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.gangs.members import GangView, view_gang


@dataclass(frozen=True)
class Recovery:
    gang: GangView
    admitted: bool
    message: str


def partly_bound(state: ClusterState) -> list[GangView]:
    """Gangs with members bound, but not enough of them to stand."""
    found = []
    for key in state.pod_groups:
        gang = view_gang(state, key)
        if gang.placed and not gang.stands:
            found.append(gang)
    return sorted(found, key=lambda gang: (-gang.ready, gang.key))


def recover(gangs: Gangs, state: ClusterState, nodes: Mapping[str, NodeInfo]) -> list[Recovery]:
    """Admit the partly bound gangs that can be completed, before anyone else; say what became
    of each."""
    outcomes = []
    for gang in partly_bound(state):
        found = f"gang {gang.key}: found {gang.ready} of {gang.min_member} members bound"
        if not gang.pending:
            message = f"{found} and no other member waiting; it stays partial until they exist"
            outcomes.append(Recovery(gang, False, message))
            continue
        refusal = gangs.admit_ahead(state, nodes, gang)
        if refusal is None:
            message = f"{found}; completing it first: capacity reserved for the rest"
        else:
            message = f"{found}; cannot complete it yet: {refusal.message}"
        outcomes.append(Recovery(gang, refusal is None, message))
    return outcomes
