"""The queue writer: the default queue exists, counts and allocation are written once per change
burst, an equal status is not written again, a failed write is retried."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import Queue
from extender.server.queue_writer import QueueWriter
from tests.builders import cluster, make_group, make_node, make_pod, make_queue
from tests.engines import make_engine


class Api:
    """What the writer would send to the API server; created queues come back as a watch would."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.versions: list[str | None] = []  # the resourceVersion each patch required
        self.created: list[str] = []
        self.fail = False
        self.conflict = False  # the Queue changed since the writer read it
        self.failed = asyncio.Event()
        self.written = asyncio.Event()

    async def write(self, name: str, status: dict[str, Any], version: str | None) -> bool:
        if self.fail:
            self.failed.set()
            raise RuntimeError("apiserver unavailable")
        if self.conflict and version is not None:
            return False
        self.patches.append((name, status))
        self.versions.append(version)
        self.written.set()
        return True

    async def create(self, name: str) -> bool:
        self.created.append(name)
        return True


def writer_for(api: Api, *queues: Queue, interval: float = 0.01) -> QueueWriter:
    state = cluster([make_node("n1").cpu("8")])
    for queue in queues:
        state.upsert_queue(queue)
    writer = QueueWriter(
        state, make_engine(), api.write, api.create, interval=interval, retry_after=0.05
    )
    writer.attach()
    return writer


def test_the_default_queue_is_created_when_missing_and_only_then() -> None:
    async def scenario() -> None:
        api = Api()
        writer = writer_for(api, make_queue("team").model())
        await writer.flush()
        assert api.created == ["default"] and api.patches == []  # counts wait for the watch
        writer.state.upsert_queue(make_queue("default").model())  # the watch delivers it
        await writer.flush()
        assert api.created == ["default"]
        assert sorted(name for name, _ in api.patches) == ["default", "team"]  # state Open

    asyncio.run(scenario())


def test_counts_and_allocation_are_written_then_not_again_while_unchanged() -> None:
    async def scenario() -> None:
        api = Api()
        writer = writer_for(
            api, make_queue("default").state("Open").model(), make_queue("q").state("Open").model()
        )
        state = writer.state
        state.upsert_pod_group(make_group("a").queue("q").phase("Running").model())
        state.upsert_pod_group(make_group("b").queue("q").model())
        state.upsert_pod(make_pod("a-0").cpu("1500m").group("a").on("n1").phase("Running").model())
        state.upsert_pod(make_pod("b-0").cpu("1").group("b").model())
        await writer.flush()
        assert api.patches == [
            (
                "q",
                {
                    "pending": 1,
                    "running": 1,
                    "allocated": {"cpu": "1500m", "pods": "1"},
                    "deserved": {"cpu": "2500m"},  # all it asks for: the other queue asks none
                },
            )
        ]
        assert state.queues["q"].status.running == 1  # cached at once
        await writer.flush()
        assert len(api.patches) == 1

    asyncio.run(scenario())


def test_a_burst_of_changes_makes_one_write() -> None:
    async def scenario() -> None:
        api = Api()
        writer = writer_for(api, make_queue("default").state("Open").model(), interval=0.5)
        state = writer.state
        task = asyncio.create_task(writer.run())
        for i in range(50):  # fifty one-pod gangs created and bound over about 0.05 s
            state.upsert_pod_group(make_group(f"g{i}").phase("Running").model())
            state.upsert_pod(
                make_pod(f"g{i}-0").cpu("100m").group(f"g{i}").on("n1").phase("Running").model()
            )
            await asyncio.sleep(0.001)
        await asyncio.wait_for(api.written.wait(), 3)
        await asyncio.sleep(0.6)  # a second pass would have run by now
        task.cancel()
        [(name, patch)] = api.patches
        assert (name, patch["running"], patch["allocated"]["cpu"]) == ("default", 50, "5")

    asyncio.run(scenario())


def test_a_failed_write_is_retried() -> None:
    async def scenario() -> None:
        api = Api()
        api.fail = True
        writer = writer_for(api, make_queue("default").model())
        task = asyncio.create_task(writer.run())
        await asyncio.wait_for(api.failed.wait(), 3)  # the first pass failed
        api.fail = False
        await asyncio.wait_for(api.written.wait(), 3)
        task.cancel()
        assert api.patches == [("default", {"state": "Open"})]

    asyncio.run(scenario())


def test_a_queue_whose_parent_is_missing_is_said_once_to_hang_under_root(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        api = Api()
        child = make_queue("child").set("spec.parent", "org").model()
        writer = writer_for(api, make_queue("default").model(), child)
        await writer.flush()
        await writer.flush()

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    said = [r.getMessage() for r in caplog.records if "parent" in r.getMessage()]
    assert said == [
        "Queue child shares the cluster as a top-level queue: its parent queue org does not exist"
    ]


def test_a_parent_is_allocated_what_its_subtree_is_and_each_level_its_share() -> None:
    async def scenario() -> None:
        api = Api()
        queues = [
            make_queue("default").state("Open").model(),
            make_queue("ml").state("Open").weight(3).model(),
            make_queue("a").state("Open").set("spec.parent", "ml").model(),
            make_queue("b").state("Open").set("spec.parent", "ml").model(),
        ]
        writer = writer_for(api, *queues)
        state = writer.state
        for leaf, cpu in (("a", "2"), ("b", "3")):
            state.upsert_pod_group(make_group(leaf).queue(leaf).phase("Running").model())
            pod = make_pod(f"{leaf}-0").cpu(cpu).group(leaf).on("n1").phase("Running")
            state.upsert_pod(pod.model())
        state.upsert_pod_group(make_group("waiting").queue("b").model())
        state.upsert_pod(make_pod("waiting-0").cpu("4").group("waiting").model())
        await writer.flush()
        written = dict(api.patches)
        # ml asks for 9 of the node's 8 cpu and deserves them all; a holds and asks 2, b the rest
        assert written["ml"]["allocated"] == {"cpu": "5", "pods": "2"}
        assert (written["ml"]["running"], written["ml"]["pending"]) == (2, 1)
        assert written["ml"]["deserved"] == {"cpu": "8"}
        assert written["a"]["deserved"] == {"cpu": "2"}
        assert written["b"]["deserved"] == {"cpu": "6"}

    asyncio.run(scenario())


def test_a_deserved_share_the_schema_drops_is_not_written_again_until_it_changes() -> None:
    async def scenario() -> None:
        api = Api()
        writer = writer_for(api, make_queue("default").state("Open").model())
        state = writer.state
        state.upsert_pod_group(make_group("g").model())
        state.upsert_pod(make_pod("g-0").cpu("1").group("g").model())
        await writer.flush()
        assert api.patches[-1][1]["deserved"] == {"cpu": "1"}
        dropped = state.queues["default"].status.model_copy(update={"deserved": EMPTY})
        state.upsert_queue(state.queues["default"].model_copy(update={"status": dropped}))
        await writer.flush()
        assert len(api.patches) == 1  # (Volcano's CRD has no status.deserved)
        state.upsert_pod(make_pod("g-1").cpu("1").group("g").model())
        await writer.flush()
        assert api.patches[-1][1]["deserved"] == {"cpu": "2"}

    asyncio.run(scenario())


def test_a_state_is_written_only_onto_the_version_it_was_derived_from() -> None:
    """A user closing a queue (`lahar queue close`) between the writer's read and its write is
    not overwritten with the Open the writer derived from the older version: the write is
    refused, nothing goes into the cache, and the next pass derives it again."""

    async def scenario() -> None:
        api = Api()
        plain = make_queue("team").model()
        team = plain.model_copy(
            update={"metadata": plain.metadata.model_copy(update={"resource_version": "41"})}
        )
        writer = writer_for(api, make_queue("default").model(), team)
        api.conflict = True
        await writer.flush()
        # team's was refused; default's cached copy has no version to hold it to
        assert [name for name, _ in api.patches] == ["default"]
        assert writer.state.queues["team"].status.state in (None, "")  # the cache is as it was
        api.conflict = False
        await writer.flush()
        assert dict(zip((n for n, _ in api.patches), api.versions, strict=True))["team"] == "41"

    asyncio.run(scenario())


def test_a_deserved_share_is_written_again_once_it_moves_by_more_than_five_percent() -> None:
    async def scenario() -> None:
        api = Api()
        writer = writer_for(api, make_queue("default").state("Open").model())
        state = writer.state
        state.upsert_pod_group(make_group("g").model())
        state.upsert_pod(make_pod("g-0").cpu("4").group("g").model())
        await writer.flush()
        assert api.patches[-1][1]["deserved"] == {"cpu": "4"}
        state.upsert_pod(make_pod("g-1").cpu("100m").group("g").model())  # 4 -> 4.1: 2.5%
        await writer.flush()
        assert len(api.patches) == 1
        assert state.queues["default"].status.deserved == Resources({"cpu": 4000})  # as written
        state.upsert_pod(make_pod("g-2").cpu("1").group("g").model())  # 4 -> 5.1
        await writer.flush()
        assert api.patches[-1][1]["deserved"] == {"cpu": "5100m"}

    asyncio.run(scenario())
