"""The status writer coalesces: many member changes in one interval make one write and one event."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from extender.api.engine_settings import GangSettings
from extender.api.native_groups import NativePodGroup
from extender.api.scheduling import GroupKind, PodGroup
from extender.server.group_status import PodGroupEvent
from extender.server.status_writer import StatusWriter
from tests.batch_builders import make_job
from tests.builders import cluster, make_group, make_node, make_pod
from tests.engines import make_engine


class Sink:
    """Collects what the writer would send to the API server."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, dict[str, Any]]] = []
        self.uids: list[str] = []  # the PodGroup each write was for
        self.events: list[tuple[str, str]] = []
        self.fail = False
        self.written = asyncio.Event()

    async def write(self, group: PodGroup, status: dict[str, Any]) -> None:
        if self.fail:
            raise RuntimeError("apiserver unavailable")
        self.writes.append((group.metadata.namespace, group.metadata.name, status))
        self.uids.append(group.metadata.uid)
        self.written.set()

    async def record(self, group: PodGroup, event: PodGroupEvent) -> None:
        self.events.append((group.metadata.name, event.reason))


def test_a_hundred_members_binding_make_one_write_and_one_event() -> None:
    async def scenario() -> None:
        size = 100
        pods = [make_pod(f"big-{i}").cpu("100m").group("big") for i in range(size)]
        state = cluster([make_node("n1").cpu("64")], pods)
        state.upsert_pod_group(make_group("big").min_member(size).model())
        sink = Sink()
        # The pass waits well beyond the ~0.1 s of binding, even on a loaded machine.
        writer = StatusWriter(state, make_engine(), sink.write, sink.record, interval=0.5)
        writer.attach()
        task = asyncio.create_task(writer.run())
        for pod in pods:  # members bound one by one over about 0.1 s, as a scheduler binds them
            state.upsert_pod(pod.on("n1").phase("Running").model())
            await asyncio.sleep(0.001)
        await asyncio.wait_for(sink.written.wait(), 2)
        await asyncio.sleep(0.6)  # a second pass would have run by now
        task.cancel()

        [(namespace, name, status)] = sink.writes
        assert (namespace, name, status["phase"], status["running"]) == (
            "default",
            "big",
            "Running",
            size,
        )
        assert sink.events == [("big", "Scheduled")]
        assert state.pod_groups["default/big"].status.phase == "Running"  # cached at once

    asyncio.run(scenario())


def test_an_unchanged_status_is_not_written_and_a_failed_write_is_retried_later() -> None:
    async def scenario() -> None:
        state = cluster([make_node("n1").cpu("4")], [make_pod("g-0").group("g")])
        state.upsert_pod_group(make_group("g").min_member(1).model())
        sink = Sink()
        writer = StatusWriter(
            state, make_engine(), sink.write, sink.record, interval=0.01, retry_after=0.05
        )
        writer.attach()
        writer.mark("default/g")
        await writer.flush()
        assert [status["phase"] for *_, status in sink.writes] == ["Pending"]
        sink.written.clear()
        writer.mark_all()
        await writer.flush()
        assert len(sink.writes) == 1  # the same status: nothing written

        sink.fail = True
        state.upsert_pod(make_pod("g-0").group("g").on("n1").phase("Running").model())
        await writer.flush()
        assert len(sink.writes) == 1 and state.pod_groups["default/g"].status.phase == "Pending"
        assert not sink.written.is_set()
        sink.fail = False
        task = asyncio.create_task(writer.run())
        await asyncio.wait_for(sink.written.wait(), 2)  # retried after `retry_after`
        task.cancel()
        assert [status["phase"] for *_, status in sink.writes] == ["Pending", "Running"]

    asyncio.run(scenario())


def test_no_pass_runs_before_the_cache_is_whole() -> None:
    """PodGroups are often listed before their pods: a status written then would be wrong."""

    async def scenario() -> None:
        state = cluster([make_node("n1").cpu("4")], [])
        state.upsert_pod_group(make_group("g").min_member(1).model())
        sink, ready = Sink(), asyncio.Event()
        writer = StatusWriter(
            state, make_engine(), sink.write, sink.record, ready=ready, interval=0.01
        )
        writer.attach()
        writer.mark_all()
        task = asyncio.create_task(writer.run())
        await asyncio.sleep(0.05)
        assert sink.writes == []
        state.upsert_pod(make_pod("g-0").group("g").on("n1").phase("Running").model())
        ready.set()
        await asyncio.wait_for(sink.written.wait(), 2)
        task.cancel()
        assert [status["phase"] for *_, status in sink.writes] == ["Running"]

    asyncio.run(scenario())


def test_a_waiting_gangs_condition_carries_the_explain_summary() -> None:
    """The Unschedulable condition says the gang rules' reason and what `lahar explain` adds:
    when the backoff ends, what each kind of member lacks, the queue's share."""

    async def scenario() -> None:
        pods = [make_pod(f"big-{i}").cpu("6").group("big").uid(f"b{i}") for i in range(2)]
        state = cluster([make_node("n0").cpu("4"), make_node("n1").cpu("8")], pods)
        state.upsert_pod_group(make_group("big").min_member(2).model())
        engine = make_engine(GangSettings(backoff=30.0), clock=lambda: 100.0)
        engine.filter(state, state.pods["b0"], [])
        engine.release("default/big", back_off=True)  # backs off until 130
        sink = Sink()
        writer = StatusWriter(state, engine, sink.write, sink.record, wall=lambda: 1_800_000_000.0)
        writer.mark("default/big")
        await writer.flush()
        [(_, _, status)] = sink.writes
        [condition] = status["conditions"]
        assert (condition["type"], condition["status"]) == ("Unschedulable", "True")
        assert condition["message"] == (
            "gang default/big: 1 of 2 members cannot be placed: Insufficient cpu. "
            "backing off until 2027-01-15T08:00:30Z. "
            "2 pending asking cpu 6: one fits on 1 node now (unreserved capacity). "
            "queue default: allocated nothing; deserves cpu 12 (share 0.00)"
        )

    asyncio.run(scenario())


def test_a_condition_naming_a_reservation_is_rewritten_when_that_reservation_ends() -> None:
    async def scenario() -> None:
        pods = [
            make_pod(f"{g}-{i}").cpu("2").group(g).uid(f"{g}{i}")
            for g in ("a", "b")
            for i in (0, 1)
        ]
        state = cluster([make_node("n0").cpu("4")], pods)
        for name in ("a", "b"):
            state.upsert_pod_group(make_group(name).min_member(2).model())
        engine = make_engine()
        engine.filter(state, state.pods["a0"], [])  # admitted: holds n0
        engine.filter(state, state.pods["b0"], [])  # waits
        sink = Sink()
        writer = StatusWriter(state, engine, sink.write, sink.record)
        writer.attach()
        writer.mark("default/b")
        await writer.flush()
        [(_, _, status)] = sink.writes
        assert "gangs with reservations: default/a" in status["conditions"][0]["message"]

        engine.release("default/a")  # its reservation ends: b's condition must not name it
        await writer.flush()
        written = {name: status for _, name, status in sink.writes}
        assert "gangs with reservations" not in written["b"]["conditions"][0]["message"]

    asyncio.run(scenario())


def test_a_gang_released_to_back_off_says_so_instead_of_admitted() -> None:
    """Admitted, then released by the barrier's timeout with a backoff: no verdict says why it
    waits now, but the condition must not go on saying it is admitted."""

    async def scenario() -> None:
        pods = [make_pod(f"a-{i}").cpu("2").group("a").uid(f"a{i}") for i in (0, 1)]
        state = cluster([make_node("n0").cpu("2")], pods)
        state.upsert_pod_group(make_group("a").min_member(2).model())
        engine = make_engine(clock=lambda: 100.0)
        sink = Sink()
        writer = StatusWriter(state, engine, sink.write, sink.record, wall=lambda: 1_800_000_000.0)
        writer.attach()
        engine.filter(state, state.pods["a0"], [])  # no room: it waits
        await writer.flush()
        state.upsert_node(make_node("n0").cpu("4").model())
        engine.filter(state, state.pods["a0"], [])  # admitted
        await writer.flush()
        admitted = sink.writes[-1][2]
        assert admitted["phase"] == "Inqueue"
        assert admitted["conditions"][0]["reason"] == "Admitted"
        engine.release("default/a", back_off=True)
        await writer.flush()
        status = sink.writes[-1][2]
        [condition] = status["conditions"]
        assert status["phase"] == "Pending"
        assert (condition["status"], condition["reason"]) == ("True", "BackingOff")
        assert condition["message"].startswith("gang default/a: backing off 10s because")
        assert sink.uids[-1] == state.pod_groups["default/a"].metadata.uid

    asyncio.run(scenario())


def test_a_coscheduling_group_shows_coschedulings_phase_and_counts_once() -> None:
    """A Coscheduling PodGroup gets the status scheduler-plugins' controller writes (its phases,
    counts, occupiedBy); a pass with nothing new writes nothing; why it waits is an event."""

    async def scenario() -> None:
        kind = GroupKind.COSCHEDULING
        pods = [make_pod(f"g-{i}").cpu("2").group("g", kind).uid(f"g{i}") for i in range(2)]
        state = cluster([make_node("n1").cpu("4")], pods)
        state.upsert_pod_group(make_group("g").min_member(2).model(kind))
        key = GroupKind.COSCHEDULING.key("default", "g")
        sink = Sink()
        writer = StatusWriter(state, make_engine(), sink.write, sink.record, now=lambda: "T0")
        writer.mark(key)
        await writer.flush()
        [(_, _, first)] = sink.writes
        assert first == {"phase": "Scheduling"}  # (its pods have no owners: no occupiedBy)
        writer.mark(key)
        await writer.flush()
        assert len(sink.writes) == 1  # nothing new: nothing written
        for pod in pods:
            state.upsert_pod(pod.on("n1").phase("Running").model())
        writer.mark(key)
        await writer.flush()
        assert sink.writes[-1][2] == {"phase": "Running", "running": 2, "scheduleStartTime": "T0"}
        assert state.pod_groups[key].status.phase == "Running"  # queue counts read it at once
        assert sink.events == [("g", "Scheduled")]

    asyncio.run(scenario())


def test_a_native_group_gets_lahars_condition_and_keeps_kube_schedulers() -> None:
    async def scenario() -> None:
        kind = GroupKind.NATIVE
        pods = [make_pod(f"g-{i}").cpu("6").group("g", kind).uid(f"g{i}") for i in range(2)]
        state = cluster([make_node("n1").cpu("8")], pods)
        state.upsert_pod_group(make_group("g").min_member(2).model(kind))
        key = kind.key("default", "g")
        engine = make_engine()
        engine.filter(state, state.pods["g0"], [])  # refused: does not fit
        sink = Sink()
        writer = StatusWriter(state, engine, sink.write, sink.record, now=lambda: "T0")
        writer.mark(key)
        await writer.flush()
        [(_, _, status)] = sink.writes
        [condition] = status["conditions"]  # only Lahar's: patched by type, others stay
        assert condition["type"] == "lahar.io/GangScheduled"
        assert (condition["status"], condition["reason"]) == ("False", "NotEnoughResources")
        assert condition["message"].startswith(f"gang {key}: 1 of 2 members cannot be placed")
        assert sink.events == [("g", "Unschedulable")]
        writer.mark(key)
        await writer.flush()
        assert len(sink.writes) == 1
        # A restarted extender reads its condition back: the same wait is no new event.
        group = state.pod_groups[key]
        body = make_group("g").min_member(2).kind_object(kind)
        body["metadata"]["uid"] = group.metadata.uid
        body["status"] = status
        state.upsert_pod_group(NativePodGroup.model_validate(body).as_gang())
        again = Sink()
        restarted = StatusWriter(state, engine, again.write, again.record, now=lambda: "T1")
        restarted.mark(key)
        await restarted.flush()
        assert again.events == []

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("schedulers", "pods", "written"),
    [
        pytest.param({"lahar"}, ["volcano", "volcano"], False, id="all pods another scheduler's"),
        pytest.param({"lahar"}, ["volcano", "lahar"], True, id="one pod ours"),
        pytest.param({"lahar"}, [], False, id="no pods yet, Volcano's scheduler not served"),
        pytest.param({"lahar", "volcano"}, [], True, id="no pods yet, volcano served"),
        pytest.param(None, ["volcano"], True, id="no names given: every group"),
    ],
)
def test_a_group_whose_pods_all_name_another_scheduler_is_left_to_it(
    schedulers: set[str] | None, pods: list[str], written: bool
) -> None:
    async def scenario() -> bool:
        members = [
            make_pod(f"g-{i}").group("g").scheduler(name).on("n1").phase("Running")
            for i, name in enumerate(pods)
        ]
        state = cluster([make_node("n1").cpu("4")], members)
        state.upsert_pod_group(make_group("g").min_member(max(len(pods), 1)).model())
        sink = Sink()
        writer = StatusWriter(
            state, make_engine(), sink.write, sink.record, interval=0.01, schedulers=schedulers
        )
        writer.attach()
        task = asyncio.create_task(writer.run())
        writer.mark("default/g")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(sink.written.wait(), 0.5)
        task.cancel()
        return bool(sink.writes)

    assert asyncio.run(scenario()) is written


def test_a_waiting_jobs_gang_let_in_is_written_inqueue_at_once_for_its_controller() -> None:
    """Its Job's controller creates its pods once the PodGroup shows Inqueue: that write does
    not wait out the interval that gathers other changes."""

    async def scenario() -> None:
        state = cluster([make_node("n1").cpu("8")], [])
        state.upsert_job(make_job("tf").task("w", 2, cpu="1").status(phase="Pending").model())
        state.upsert_pod_group(make_group("tf-uid-tf").min_member(2).model())
        sink = Sink()
        engine = make_engine(schedulers={"volcano"})
        writer = StatusWriter(state, engine, sink.write, sink.record, interval=5.0)
        writer.attach()
        task = asyncio.create_task(writer.run())
        await asyncio.sleep(0)
        assert engine.let_in(state) == ["default/tf-uid-tf"]
        await asyncio.wait_for(sink.written.wait(), 1.0)  # (well before the 5 s interval)
        task.cancel()
        [(_, name, status)] = sink.writes
        assert (name, status["phase"]) == ("tf-uid-tf", "Inqueue")

    asyncio.run(scenario())
