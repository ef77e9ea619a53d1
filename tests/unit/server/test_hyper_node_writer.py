"""The HyperNode writer: each HyperNode's nodeCount written once when it differs, written again
when the topology moves it, retried after a failed write, and nothing without HyperNodes."""

from __future__ import annotations

import asyncio
from typing import Any

from extender.cache.state import ClusterState
from extender.server.hyper_node_writer import HyperNodeWriter
from tests.builders import cluster, make_hyper_node, make_node


class Api:
    """What the writer would send to the API server."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.fail = False
        self.gone: set[str] = set()
        self.failed = asyncio.Event()
        self.written = asyncio.Event()

    async def write(self, name: str, uid: str, status: dict[str, Any]) -> bool:
        if self.fail:
            self.failed.set()
            raise RuntimeError("apiserver unavailable")
        if name in self.gone:
            return False
        self.patches.append((name, status))
        self.written.set()
        return True


def fabric() -> ClusterState:
    """Nodes n0..n3 in switches s0 and s1 under spine p0; no count written."""
    state = cluster([make_node(f"n{i}") for i in range(4)])
    state.upsert_hyper_node(make_hyper_node("s0").tier(1).nodes("n0", "n1").model())
    state.upsert_hyper_node(make_hyper_node("s1").tier(1).nodes("n2", "n3").model())
    state.upsert_hyper_node(make_hyper_node("p0").tier(2).hyper_nodes("s0", "s1").model())
    return state


def writer_for(api: Api, state: ClusterState) -> HyperNodeWriter:
    writer = HyperNodeWriter(state, api.write, interval=0.01, retry_after=0.05)
    writer.attach()
    return writer


def test_counts_are_written_once_then_again_when_a_switch_grows() -> None:
    async def scenario() -> None:
        api = Api()
        state = fabric()
        writer = writer_for(api, state)
        await writer.flush()
        assert api.patches == [
            ("p0", {"nodeCount": 4}),
            ("s0", {"nodeCount": 2}),
            ("s1", {"nodeCount": 2}),
        ]
        assert state.hyper_nodes["p0"].status.node_count == 4  # cached at once
        await writer.flush()
        assert len(api.patches) == 3
        state.upsert_node(make_node("n4").model())
        grown = make_hyper_node("s1").tier(1).nodes("n2", "n3", "n4").set("status.nodeCount", 2)
        state.upsert_hyper_node(grown.model())
        await writer.flush()
        assert api.patches[3:] == [("p0", {"nodeCount": 5}), ("s1", {"nodeCount": 3})]

    asyncio.run(scenario())


def test_a_topology_change_wakes_the_writer_and_a_burst_makes_one_pass() -> None:
    async def scenario() -> None:
        api = Api()
        state = cluster([make_node(f"n{i}") for i in range(4)])
        writer = HyperNodeWriter(state, api.write, interval=0.2, retry_after=0.05)
        writer.attach()
        task = asyncio.create_task(writer.run())
        await asyncio.sleep(0.3)  # the first pass: no HyperNodes, nothing written
        assert api.patches == []
        for hyper_node in fabric().hyper_nodes.values():
            state.upsert_hyper_node(hyper_node)
        await asyncio.wait_for(api.written.wait(), 3)
        await asyncio.sleep(0.3)  # a second pass would have run by now
        task.cancel()
        assert sorted(name for name, _ in api.patches) == ["p0", "s0", "s1"]

    asyncio.run(scenario())


def test_a_failed_write_is_retried() -> None:
    async def scenario() -> None:
        api = Api()
        api.fail = True
        writer = writer_for(api, fabric())
        task = asyncio.create_task(writer.run())
        await asyncio.wait_for(api.failed.wait(), 3)  # the first pass failed
        api.fail = False
        await asyncio.wait_for(api.written.wait(), 3)
        task.cancel()
        assert len(api.patches) == 3

    asyncio.run(scenario())


def test_a_hyper_node_deleted_meanwhile_is_left_alone() -> None:
    async def scenario() -> None:
        api = Api()
        api.gone = {"s0"}
        state = fabric()
        await writer_for(api, state).flush()
        assert [name for name, _ in api.patches] == ["p0", "s1"]
        assert state.hyper_nodes["s0"].status.node_count is None

    asyncio.run(scenario())
