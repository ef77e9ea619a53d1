"""The controller's HyperNodes from node labels: the flags parsed and refused naming the flag, what
a node change is, what the nodes want written, and what one sync writes and says (the kube layer
replaced by fakes)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any

import pytest

from extender.api.objects import Node
from extender.api.topology_labels import LabelTier, Plan, plan
from extender.cache.informer import ABSENT_RECHECK
from extender.cli.controller_cmd import hypernode_tiers
from extender.controller.hypernodes import (
    RESYNC_SECONDS,
    HyperNodeSync,
    NodeLabels,
    parse_tiers,
    wanted,
)
from extender.kube import KubeError
from extender.kube.hyper_nodes import ForeignHyperNodes
from tests.builders import make_hyper_node, make_node

RACK, SPINE = "rack", "spine"
TIERS = parse_tiers("rack,spine")


def node(name: str, rack: str | None = None, spine: str | None = None) -> Node:
    builder = make_node(name)
    for key, value in ((RACK, rack), (SPINE, spine)):
        if value is not None:
            builder = builder.label(key, value)
    return builder.model()


@pytest.mark.parametrize(
    ("labels", "names", "tiers"),
    [
        ("rack", "", (LabelTier(RACK, RACK),)),
        ("rack,spine", "", (LabelTier(RACK, RACK), LabelTier(SPINE, SPINE))),
        (" rack , spine ", "leaf", (LabelTier(RACK, "leaf"), LabelTier(SPINE, SPINE))),
        ("example.com/rack", "leaf", (LabelTier("example.com/rack", "leaf"),)),
    ],
    ids=["one", "two", "spaces-and-a-name", "prefixed"],
)
def test_parse_tiers(labels: str, names: str, tiers: tuple[LabelTier, ...]) -> None:
    assert parse_tiers(labels, names) == tiers


@pytest.mark.parametrize(
    ("labels", "names", "error"),
    [
        ("", "leaf", "--hypernode-labels: give at least one node label"),
        ("rack,,spine", "", "--hypernode-labels: '': the name part"),
        ("rack,rack", "", "--hypernode-labels: rack given more than once"),
        ("Bad_Prefix/rack", "", "--hypernode-labels: 'Bad_Prefix/rack': the prefix"),
        ("rack", "a,b", "--hypernode-tier-names: 2 names for 1 labels"),
    ],
    ids=["names-only", "empty-label", "repeated", "bad-prefix", "too-many-names"],
)
def test_bad_flags_end_the_command_naming_the_flag(labels: str, names: str, error: str) -> None:
    with pytest.raises(SystemExit, match="^" + re.escape(f"lahar controller: {error}")):
        hypernode_tiers(labels, names)


def test_without_the_flag_there_are_no_tiers() -> None:
    assert hypernode_tiers("", "") == ()


@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        (None, node("n0", "r0"), True),
        (node("n0", "r0"), node("n0", "r0"), False),
        (node("n0", "r0"), make_node("n0").label(RACK, "r0").cpu("4").model(), False),
        (node("n0", "r0"), make_node("n0").label(RACK, "r0").label("zone", "z").model(), False),
        (node("n0", "r0"), node("n0", "r1"), True),
        (node("n0", "r0"), node("n0", "r0", "p0"), True),
    ],
    ids=["added", "same", "status-only", "other-label", "moved", "spine-added"],
)
def test_only_tier_labels_are_a_change(before: Node | None, after: Node, changed: bool) -> None:
    store, pokes = NodeLabels(TIERS), []
    if before is not None:
        store.replace([before])
    store.on_change = lambda: pokes.append(1)

    store.upsert(after)

    assert bool(pokes) == changed
    assert store.nodes["n0"] == after


def test_a_node_going_is_a_change_once() -> None:
    store, pokes = NodeLabels(TIERS), []
    store.replace([node("n0", "r0")])
    store.on_change = lambda: pokes.append(1)

    store.delete(node("n0", "r0"))
    store.delete(node("n0", "r0"))

    assert (store.nodes, pokes) == ({}, [1])


def members(items: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        item["metadata"]["name"]: [
            m["selector"]["exactMatch"]["name"] for m in item["spec"]["members"]
        ]
        for item in items
    }


@pytest.mark.parametrize(
    ("nodes", "want"),
    [
        ([], {}),
        ([node("n0")], {}),
        ([node("n0", "r0")], {"t1-r0": ["n0"]}),
        (
            [node("n0", "r0", "p0"), node("n1", "r0", "p0"), node("n2", "r1", "p0")],
            {"t1-r0": ["n0", "n1"], "t1-r1": ["n2"], "t2-p0": ["t1-r0", "t1-r1"]},
        ),
    ],
    ids=["no-nodes", "unlabelled", "one-rack", "two-racks-one-spine"],
)
def test_wanted(nodes: list[Node], want: dict[str, list[str]]) -> None:
    assert members(wanted(TIERS, nodes)) == want


def test_wanted_refuses_two_parents() -> None:
    with pytest.raises(ValueError, match=re.escape("rack=r0 (tier 1) is under several")):
        wanted(TIERS, [node("n0", "r0", "p0"), node("n1", "r0", "p1")])


class FakeCluster:
    """The kube layer's sync and discovery, on a dict of HyperNodes."""

    def __init__(self, *, served: bool = True, failing: KubeError | None = None) -> None:
        self.served, self.failing = served, failing
        self.hyper_nodes: dict[str, dict[str, Any]] = {}
        self.syncs = 0

    def serves(self, api: object) -> bool:
        return self.served

    def sync(self, api: object, items: Sequence[dict[str, Any]]) -> Plan:
        self.syncs += 1
        if self.failing is not None:
            raise self.failing
        todo = plan(items, list(self.hyper_nodes.values()))
        if todo.foreign:
            raise ForeignHyperNodes(todo.foreign)
        for item in (*todo.create, *todo.update):
            self.hyper_nodes[item["metadata"]["name"]] = item
        for name in todo.delete:
            del self.hyper_nodes[name]
        return todo


def sync_once(cluster: FakeCluster, nodes: list[Node]) -> float:
    async def run() -> float:
        keeper = HyperNodeSync(None, TIERS, sync=cluster.sync, serves=cluster.serves)  # type: ignore[arg-type]
        keeper.store.replace(nodes)
        return await keeper.sync_once()

    return asyncio.run(run())


def test_a_sync_writes_and_says_what_it_did(caplog: pytest.LogCaptureFixture) -> None:
    cluster = FakeCluster()
    caplog.set_level(logging.INFO, "extender.controller.hypernodes")

    assert sync_once(cluster, [node("n0", "r0", "p0"), node("n1", "r1", "p0")]) == RESYNC_SECONDS
    assert members(list(cluster.hyper_nodes.values()))["t2-p0"] == ["t1-r0", "t1-r1"]
    assert "hypernode t1-r0 created: rack=r0, 1 members" in caplog.messages

    assert sync_once(cluster, [node("n0", "r0", "p0"), node("n1", "r0", "p0")]) == RESYNC_SECONDS
    assert members(list(cluster.hyper_nodes.values())) == {
        "t1-r0": ["n0", "n1"],
        "t2-p0": ["t1-r0"],
    }
    assert "hypernode t1-r0 updated: rack=r0, now 2 members" in caplog.messages
    assert "hypernode t1-r1 deleted: no node's labels describe it any more" in caplog.messages


def test_not_served_is_said_once_and_looked_at_later(caplog: pytest.LogCaptureFixture) -> None:
    cluster = FakeCluster(served=False)
    caplog.set_level(logging.INFO, "extender.controller.hypernodes")

    async def run() -> list[float]:
        keeper = HyperNodeSync(None, TIERS, sync=cluster.sync, serves=cluster.serves)  # type: ignore[arg-type]
        keeper.store.replace([node("n0", "r0")])
        delays = [await keeper.sync_once(), await keeper.sync_once()]
        cluster.served = True
        return [*delays, await keeper.sync_once()]

    assert asyncio.run(run()) == [ABSENT_RECHECK, ABSENT_RECHECK, RESYNC_SECONDS]
    said = [r for r in caplog.records if "not served" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO]
    assert any("served now" in message for message in caplog.messages)
    assert cluster.syncs == 1


@pytest.mark.parametrize(
    ("nodes", "cluster", "said", "delay"),
    [
        (
            [node("n0", "r0")],
            FakeCluster(),
            "not written: HyperNodes t1-r0 exist without the label",
            RESYNC_SECONDS,
        ),
        (
            [node("n0", "r0", "p0"), node("n1", "r0", "p1")],
            FakeCluster(),
            "not written: a HyperNode has one parent",
            RESYNC_SECONDS,
        ),
        ([node("n0", "r0")], FakeCluster(failing=KubeError("connection refused")), "retrying", 1.0),
    ],
    ids=["foreign", "two-parents", "api-failure"],
)
def test_what_is_not_written_is_a_warning(
    nodes: list[Node],
    cluster: FakeCluster,
    said: str,
    delay: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster.hyper_nodes["t1-r0"] = make_hyper_node("t1-r0").nodes("n0").build()

    assert sync_once(cluster, nodes) == delay

    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert said in warning.getMessage()
    assert cluster.hyper_nodes["t1-r0"] == make_hyper_node("t1-r0").nodes("n0").build()
