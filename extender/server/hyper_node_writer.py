"""Writing each HyperNode's `status.nodeCount`, coalesced, as Volcano's hypernode controller does.

`kubectl get hypernodes` shows a NodeCount column read from `status.nodeCount`: the number of
nodes under the HyperNode, directly or through its member HyperNodes. Where Lahar stands in for
Volcano, nothing else writes it: the leading extender does. A change to what the topology
resolves to (a HyperNode created, deleted or given a new spec; a node added, removed or
relabelled: `TopologyChanged`, `cache.events`) only wakes the writer; it waits `interval`, so that
the rest of a burst (a whole tree of HyperNodes applied at once) joins the same pass, resolves the
topology (`gangs.topology`) and merge-patches the HyperNodes whose count differs from what the
cached object shows (`stale_node_counts`). The first pass, once this replica leads, corrects
counts left stale by a previous leader or never written. A written count goes onto the cached
HyperNode at once (a status change is no topology change: it wakes nothing), so the next pass
does not write it again. A cluster without Volcano's HyperNode CRD has no HyperNodes cached, and
the writer writes nothing. It is a writer of its own rather than part of the queue writer: it
reads no gangs, wakes on other changes, and runs under any policy, with gang rules or without.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from extender.api.log_fields import about
from extender.api.topology import HyperNode
from extender.cache.events import TopologyChanged
from extender.cache.state import ClusterState
from extender.framework.engine import Topology, stale_node_counts
from extender.server.coalesce import Coalesced

log = logging.getLogger(__name__)
# (HyperNode name, its uid, status merge patch) -> written; False: that HyperNode is gone (or is
# another of that name now), nothing was written.
HyperNodePatch = Callable[[str, str, dict[str, Any]], Awaitable[bool]]


class HyperNodeWriter(Coalesced):
    first_pass = True  # counts a previous leader left stale, or nobody wrote

    def __init__(
        self,
        state: ClusterState,
        write: HyperNodePatch,
        *,
        ready: asyncio.Event | None = None,
        interval: float = 1.0,
        retry_after: float = 5.0,
    ) -> None:
        super().__init__(ready=ready, interval=interval, retry_after=retry_after)
        self.state, self.write = state, write

    def attach(self) -> None:
        """Listen to the state (call on the event loop)."""
        super().attach()
        self.state.events.subscribe(TopologyChanged, lambda event: self.poke())

    async def flush(self) -> None:
        if not self.state.hyper_nodes:
            return
        stale = stale_node_counts(self.state.hyper_nodes, Topology.of(self.state))
        for name, count in sorted(stale.items()):
            await self._write(self.state.hyper_nodes[name], count)

    async def _write(self, hyper_node: HyperNode, count: int) -> None:
        name, previous = hyper_node.name, hyper_node.status.node_count
        try:
            done = await self.write(name, hyper_node.metadata.uid, {"nodeCount": count})
        except Exception as error:  # an API hiccup (or no permission): the next pass tries again
            log.warning(
                "could not write the node count of HyperNode %s: %s",
                name,
                error,
                extra=about("HyperNode", name),
            )
            self.later(self.poke)
            return
        if not done:  # its deletion (or successor) arrives by the watch and wakes the next pass
            log.info(
                "HyperNode %s was deleted before its node count was written",
                name,
                extra=about("HyperNode", name),
            )
            return
        log.info(
            "HyperNode %s: nodeCount %s -> %d",
            name,
            "-" if previous is None else previous,
            count,
            extra=about("HyperNode", name),
        )
        if self.state.hyper_nodes.get(name) is hyper_node:  # else the watch moved on meanwhile
            status = hyper_node.status.model_copy(update={"node_count": count})
            self.state.upsert_hyper_node(hyper_node.model_copy(update={"status": status}))
