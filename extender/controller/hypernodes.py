"""Keeping the HyperNodes built from node labels in step with the nodes (`--hypernode-labels`).

`lahar hypernodes build --apply` writes them once; with `--hypernode-labels`, the controller keeps
them, as Volcano's hypernode controller keeps those of its label discovery. An informer watches the
nodes carrying the tier-1 label (a node that loses it leaves the watch as deleted) into
`NodeLabels`, on the event loop; a change to a node's tier labels (a node added, removed or
relabelled; heartbeats and status changes are not changes here) sets `HyperNodeSync.changed`.

`HyperNodeSync.run` waits until this process leads and the nodes are listed, then syncs: builds the
wanted HyperNodes from the labels (`api.topology_labels.build`, pure) and writes them with
`kube.hyper_nodes.sync_hyper_nodes` in a worker thread, so the blocking calls never block the event
loop. It then waits for the next change, and after one waits `DEBOUNCE_SECONDS` more so that a
burst (a rack relabelled node by node) is written once. With no change it looks again every
`RESYNC_SECONDS` (a HyperNode deleted or edited by hand is restored; one in the way removed).
Only HyperNodes carrying the builder's source label are written or deleted: a wanted name used by
another HyperNode, or a value the labels put under two parents, is a WARNING naming them, and
nothing is written until the next change or look. While the API server does not serve HyperNodes
(Volcano's topology CRD is not installed) that is said once at INFO and looked at again every
`ABSENT_RECHECK` seconds; other API failures are WARNINGs, retried with capped backoff.

The same concept at a lower layer: `admission.hypernodes`, the rules a HyperNode is admitted by (the
model both read is `api.topology`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from aiohttp import web
from kubernetes import client as k8s

from extender.api.log_fields import about
from extender.api.objects import Node
from extender.api.topology_labels import (
    SOURCE_LABEL,
    LabelTier,
    Plan,
    build,
    label_tiers,
    manifest,
)
from extender.cache.informer import ABSENT_RECHECK, Informers
from extender.cache.kinds import Kind
from extender.kube import KubeError
from extender.kube.hyper_nodes import ForeignHyperNodes, serves_hyper_nodes, sync_hyper_nodes
from extender.shell import SHELL, Lifecycle, guarded

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 1.0  # after a change, how long more changes are gathered before one sync
RESYNC_SECONDS = 300.0  # with no change, how often the HyperNodes are looked at again
MAX_BACKOFF = 60.0  # the longest wait before retrying a sync the API server failed

Sync = Callable[[k8s.ApiClient, Sequence[dict[str, Any]]], Plan]
Serves = Callable[[k8s.ApiClient], bool]


def parse_tiers(labels: str, names: str = "") -> tuple[LabelTier, ...]:
    """The tiers of `--hypernode-labels` (comma-separated, the nearest first) and
    `--hypernode-tier-names` (comma-separated, in the same order). A ValueError names the flag
    and why."""
    keys = [part.strip() for part in labels.split(",")] if labels.strip() else []
    given = [part.strip() for part in names.split(",")] if names.strip() else []
    return label_tiers(
        keys, given, label_flag="--hypernode-labels", name_flag="--hypernode-tier-names"
    )


def tier_values(tiers: Sequence[LabelTier], node: Node) -> tuple[str | None, ...]:
    """What of a node the HyperNodes depend on: its value of each tier's label."""
    return tuple(node.metadata.labels.get(tier.label) for tier in tiers)


class NodeLabels:
    """The watched nodes, by name, written only on the event loop; `on_change` is called when a
    node's tier labels change, or a node comes or goes."""

    def __init__(self, tiers: Sequence[LabelTier]) -> None:
        self.tiers = tuple(tiers)
        self.nodes: dict[str, Node] = {}
        self.on_change: Callable[[], None] = lambda: None

    def _seen(self, node: Node | None) -> tuple[str | None, ...] | None:
        return None if node is None else tier_values(self.tiers, node)

    def replace(self, nodes: list[Node]) -> None:
        before = {name: self._seen(node) for name, node in self.nodes.items()}
        self.nodes = {node.metadata.name: node for node in nodes}
        if before != {name: self._seen(node) for name, node in self.nodes.items()}:
            self.on_change()

    def upsert(self, node: Node) -> None:
        name = node.metadata.name
        changed = self._seen(self.nodes.get(name)) != self._seen(node)
        self.nodes[name] = node
        if changed:
            self.on_change()

    def delete(self, node: Node) -> None:
        if self.nodes.pop(node.metadata.name, None) is not None:
            self.on_change()


def node_kind(tiers: Sequence[LabelTier]) -> Kind[NodeLabels, Node]:
    """The nodes carrying the tier-1 label (the others are in no HyperNode)."""
    return Kind(
        "nodes",
        "/api/v1/nodes",
        Node,
        NodeLabels.replace,
        NodeLabels.upsert,
        NodeLabels.delete,
        selector=tiers[0].label,
        object_kind="Node",
    )


def wanted(tiers: Sequence[LabelTier], nodes: Sequence[Node]) -> tuple[dict[str, Any], ...]:
    """The HyperNode manifests the nodes' labels describe; a ValueError naming the values the
    labels put under several parents (a HyperNode has one)."""
    built = build(tiers, nodes)
    if built.conflicts:
        raise ValueError(
            "a HyperNode has one parent, but the labels put these under several: "
            + "; ".join(str(conflict) for conflict in built.conflicts)
        )
    return tuple(manifest(hyper_node) for hyper_node in built.hyper_nodes)


def _built_from(item: dict[str, Any]) -> str:
    labels = item["metadata"]["labels"]
    return ", ".join(f"{key}={value}" for key, value in labels.items() if key != SOURCE_LABEL)


class HyperNodeSync:
    """The sync loop (see the module's note); `sync` and `serves` are the kube layer's."""

    def __init__(
        self,
        api: k8s.ApiClient,
        tiers: Sequence[LabelTier],
        *,
        sync: Sync = sync_hyper_nodes,
        serves: Serves = serves_hyper_nodes,
    ) -> None:
        self.api, self.tiers = api, tuple(tiers)
        self._sync, self._serves = sync, serves
        self.store = NodeLabels(self.tiers)
        self.changed = asyncio.Event()
        self.synced = asyncio.Event()  # the nodes have been listed
        self.store.on_change = self.changed.set
        self.absent = False  # the API server does not serve HyperNodes (said once)
        self._backoff = 1.0

    @property
    def labels(self) -> str:
        return ", ".join(tier.label for tier in self.tiers)

    async def run(self, leading: asyncio.Event) -> None:
        await leading.wait()
        await self.synced.wait()
        log.info("keeping the HyperNodes built from node labels %s", self.labels)
        while True:
            self.changed.clear()
            delay = await self.sync_once()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout=delay)
                await asyncio.sleep(DEBOUNCE_SECONDS)  # gather the rest of a burst

    async def sync_once(self) -> float:
        """One sync of the wanted HyperNodes; the seconds until the next one, barring changes."""
        try:
            items = wanted(self.tiers, list(self.store.nodes.values()))
        except ValueError as error:
            log.warning("HyperNodes from node labels %s not written: %s", self.labels, error)
            return RESYNC_SECONDS
        try:
            done = await asyncio.to_thread(self._write, items)
        except ForeignHyperNodes as error:
            log.warning("HyperNodes from node labels %s not written: %s", self.labels, error)
            return RESYNC_SECONDS
        except KubeError as error:
            delay, self._backoff = self._backoff, min(self._backoff * 2, MAX_BACKOFF)
            log.warning(
                "HyperNodes from node labels %s not written (%s); retrying in %.0fs",
                self.labels,
                error,
                delay,
            )
            return delay
        self._backoff = 1.0
        if done is None:
            return ABSENT_RECHECK
        for item in done.create:
            log.info(
                "hypernode %s created: %s, %d members",
                item["metadata"]["name"],
                _built_from(item),
                len(item["spec"]["members"]),
                extra=about("HyperNode", item["metadata"]["name"]),
            )
        for item in done.update:
            log.info(
                "hypernode %s updated: %s, now %d members",
                item["metadata"]["name"],
                _built_from(item),
                len(item["spec"]["members"]),
                extra=about("HyperNode", item["metadata"]["name"]),
            )
        for name in done.delete:
            log.info(
                "hypernode %s deleted: no node's labels describe it any more",
                name,
                extra=about("HyperNode", name),
            )
        return RESYNC_SECONDS

    def _write(self, items: Sequence[dict[str, Any]]) -> Plan | None:
        """In a worker thread: the sync, or None while HyperNodes are not served."""
        if not self._serves(self.api):
            if not self.absent:
                log.info(
                    "hypernodes are not served by this cluster (Volcano's topology CRD is not "
                    "installed); the HyperNodes from node labels %s are written once they are "
                    "(checked every %.0fs)",
                    self.labels,
                    ABSENT_RECHECK,
                )
            self.absent = True
            return None
        if self.absent:
            log.info("hypernodes are served now: writing those from node labels %s", self.labels)
            self.absent = False
        return self._sync(self.api, items)


def keep_hyper_nodes(
    api: k8s.ApiClient, tiers: Sequence[LabelTier]
) -> tuple[list[Lifecycle], asyncio.Event]:
    """The app's parts that keep the HyperNodes: the node informer (from the start, so a standby
    has the nodes when it comes to lead) and the sync loop, a guarded task; and the event set
    once the nodes are listed (part of the cache readiness waits for)."""
    keeper = HyperNodeSync(api, tiers)

    async def watch(app: web.Application) -> AsyncIterator[None]:
        informers = Informers(
            api, keeper.store, asyncio.get_running_loop(), (node_kind(keeper.tiers),)
        )
        informers.on_synced.append(keeper.synced.set)
        informers.start()
        yield
        await asyncio.to_thread(informers.stop)

    async def work(app: web.Application) -> None:
        await keeper.run(app[SHELL].leading)

    return [watch, guarded(work, "hypernode sync")], keeper.synced
