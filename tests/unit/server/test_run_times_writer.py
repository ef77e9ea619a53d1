"""The run-times writer: a gang whose PodGroup the status writer turns Completed is recorded once,
under its owner and queue, with the seconds from its start (as its group of each kind says it) to
its end; a replica that starts over records none of the gangs already finished; a failed write
keeps the runs for the next one; a replica that does not lead writes nothing."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from extender.api.objects import Pod
from extender.api.scheduling import GroupKind, PodGroup
from extender.api.times import rfc3339
from extender.cache.state import ClusterState
from extender.kube.run_times import Run
from extender.server import run_times_writer
from extender.server.group_status import PodGroupEvent
from extender.server.run_times_writer import RunTimesWriter, owner_key
from extender.server.status_writer import StatusWriter
from tests.builders import cluster, make_group, make_node, make_pod
from tests.engines import make_engine

T0 = 1_800_000_000.0  # when the gangs stand
JOB_UID = "0f8c3a52-5b7e-4c1d-9a3e-2d4b6f8e1a90"
CONFIGMAP = "ConfigMap lahar-system/lahar-run-times"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def stamp(self) -> str:
        return rfc3339(self.now)


class History:
    """What the writer would merge into the ConfigMap: each call's runs."""

    def __init__(self) -> None:
        self.calls: list[tuple[Run, ...]] = []
        self.fail: str | None = None
        self.written = asyncio.Event()

    async def write(self, runs: tuple[Run, ...]) -> str | None:
        if self.fail is not None:
            raise RuntimeError(self.fail)
        self.calls.append(runs)
        self.written.set()
        return None


class Sink:
    """The status writer's outputs: status writes and events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    async def write(self, group: PodGroup, status: dict[str, Any]) -> None:
        return None

    async def record(self, group: PodGroup, event: PodGroupEvent) -> None:
        self.events.append((group.metadata.name, event.reason))


@dataclass(frozen=True)
class Case:
    kind: GroupKind
    name: str
    owners: tuple[tuple[str, str, str], ...]  # (apiVersion, kind, name)
    owner: str  # the owner key its runs go under


CASES = {
    "a Volcano Job's group: the Job": Case(
        GroupKind.VOLCANO,
        f"train-{JOB_UID}",
        (("batch.volcano.sh/v1alpha1", "Job", "train"),),
        "ml/train",
    ),
    "a Volcano group of no owner: the group": Case(GroupKind.VOLCANO, "solo", (), "ml/solo"),
    "a group another owner named: the group": Case(
        GroupKind.VOLCANO,
        "etl-driver",
        (("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl"),),
        "ml/etl-driver",
    ),
    "a Coscheduling group: its kind-qualified key": Case(
        GroupKind.COSCHEDULING, "cos", (), "ml/podgroups.scheduling.x-k8s.io/cos"
    ),
    "a native group: its kind-qualified key": Case(
        GroupKind.NATIVE, "nat", (), "ml/podgroups.scheduling.k8s.io/nat"
    ),
}


def group_of(case: Case, uid: str = "group-uid-1") -> PodGroup:
    owners = [
        {"apiVersion": v, "kind": k, "name": n, "uid": JOB_UID, "controller": True}
        for v, k, n in case.owners
    ]
    builder = (
        make_group(case.name)
        .ns("ml")
        .queue("research")
        .min_member(2)
        .set("metadata.uid", uid)
        .set("metadata.ownerReferences", owners)
    )
    return builder.model(case.kind)


def members(case: Case, phase: str) -> list[Pod]:
    """Its two members, bound to n1, in `phase`."""
    return [
        make_pod(f"{case.name}-{i}")
        .ns("ml")
        .cpu("1")
        .group(case.name, case.kind)
        .on("n1")
        .phase(phase)
        .model()
        for i in range(2)
    ]


@dataclass
class Replica:
    """One serving replica: its status writer, telling the run-times writer its events."""

    state: ClusterState
    status: StatusWriter
    runs: RunTimesWriter
    sink: Sink
    history: History

    async def pass_(self) -> None:
        self.status.mark_all()
        await self.status.flush()


def replica(state: ClusterState, clock: Clock) -> Replica:
    sink, history = Sink(), History()
    runs = RunTimesWriter(state, history.write, wall=lambda: clock.now)
    status = StatusWriter(
        state, make_engine(), sink.write, runs.watching(sink.record), now=clock.stamp
    )
    runs.attach()  # as the app does once this replica serves
    status.attach()
    return Replica(state, status, runs, sink, history)


def running_gang(case: Case) -> ClusterState:
    state = cluster([make_node("n1").cpu("8")], members(case, "Running"))
    state.upsert_pod_group(group_of(case))
    return state


def finish(state: ClusterState, case: Case, phase: str = "Succeeded") -> None:
    for pod in members(case, phase):
        state.upsert_pod(pod)


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_a_gang_that_completes_is_recorded_once_under_its_owner_and_queue(case: Case) -> None:
    async def scenario() -> None:
        clock = Clock()
        lead = replica(running_gang(case), clock)
        await lead.pass_()  # it stands: Running, its start stamped now
        clock.now = T0 + 125
        finish(lead.state, case)
        await lead.pass_()
        assert (case.name, "Completed") in lead.sink.events
        clock.now = T0 + 190
        (group,) = lead.state.pod_groups.values()
        lead.runs.finished(group)  # told again (a late watch event has it written twice)
        await lead.runs.flush()
        assert lead.history.calls == [((case.owner, "research", 125.0, T0 + 125),)]
        assert owner_key(group) == case.owner
        await lead.runs.flush()
        assert len(lead.history.calls) == 1  # nothing more to write

    asyncio.run(scenario())


def test_a_volcano_group_written_completed_again_after_a_stale_watch_event_counts_once() -> None:
    async def scenario() -> None:
        case = CASES["a Volcano Job's group: the Job"]
        clock = Clock()
        lead = replica(running_gang(case), clock)
        await lead.pass_()
        (key,) = lead.state.pod_groups
        standing = lead.state.pod_groups[key]
        clock.now = T0 + 60
        finish(lead.state, case)
        await lead.pass_()
        lead.state.upsert_pod_group(standing)  # the watch delivers the status it had before
        clock.now = T0 + 61
        await lead.pass_()
        assert lead.sink.events.count((case.name, "Completed")) == 2
        await lead.runs.flush()
        assert lead.history.calls == [(("ml/train", "research", 60.0, T0 + 60),)]

    asyncio.run(scenario())


def test_a_gang_that_failed_ran_no_whole_run_and_is_not_recorded() -> None:
    async def scenario() -> None:
        case = CASES["a Volcano group of no owner: the group"]
        clock = Clock()
        lead = replica(running_gang(case), clock)
        await lead.pass_()
        clock.now = T0 + 30
        finish(lead.state, case, "Failed")
        await lead.pass_()
        assert (case.name, "Failed") in lead.sink.events
        assert lead.runs.buffered == ()

    asyncio.run(scenario())


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_a_replica_that_starts_over_does_not_record_a_finished_gang_again(case: Case) -> None:
    async def scenario() -> None:
        clock = Clock()
        first = replica(running_gang(case), clock)
        await first.pass_()
        clock.now = T0 + 125
        finish(first.state, case)
        await first.pass_()
        await first.runs.flush()
        assert len(first.history.calls) == 1

        # A restart: the cache lists the group as written and the finished members again.
        clock.now = T0 + 400
        state = cluster([make_node("n1").cpu("8")], members(case, "Succeeded"))
        (group,) = first.state.pod_groups.values()
        state.upsert_pod_group(group)
        second = replica(state, clock)
        await second.pass_()
        second.runs.finished(state.pod_groups[group.key])  # even if told it finished
        await second.runs.flush()
        assert second.history.calls == []

    asyncio.run(scenario())


def test_a_gang_that_ended_while_no_replica_led_is_not_recorded() -> None:
    """Its end is not known: the Completed status the new leader writes is not when it ended."""

    async def scenario() -> None:
        case = CASES["a Volcano Job's group: the Job"]
        clock = Clock()
        first = replica(running_gang(case), clock)
        await first.pass_()  # Running, as the leader before wrote it
        clock.now = T0 + 900
        state = cluster([make_node("n1").cpu("8")], members(case, "Succeeded"))
        (group,) = first.state.pod_groups.values()
        state.upsert_pod_group(group)
        second = replica(state, clock)
        await second.pass_()
        assert (case.name, "Completed") in second.sink.events
        assert second.runs.buffered == ()

    asyncio.run(scenario())


def completed(name: str, uid: str, started: float) -> PodGroup:
    """A Volcano PodGroup as the status writer leaves a gang that finished whole."""
    scheduled = {"type": "Scheduled", "status": "True", "lastTransitionTime": rfc3339(started)}
    status = {"phase": "Completed", "conditions": [scheduled], "succeeded": 1}
    group = make_group(name).ns("ml").queue("research").set("metadata.uid", uid)
    return group.set("status", status).model()


def test_a_failed_write_keeps_the_runs_for_the_next_one(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        clock = Clock()
        history = History()
        runs = RunTimesWriter(ClusterState(), history.write, wall=lambda: clock.now)
        failures: list[int] = []
        recorded: list[int] = []
        runs.on_failed = lambda: failures.append(1)
        runs.on_recorded = recorded.append
        runs.attach()
        clock.now = T0 + 10
        runs.finished(completed("a", "u-a", T0))
        history.fail = 'configmaps "lahar-run-times" is forbidden'
        with caplog.at_level(logging.WARNING, logger=run_times_writer.__name__):
            await runs.flush()
        assert history.calls == [] and failures == [1]
        assert runs.buffered == (("ml/a", "research", 10.0, T0 + 10),)
        (line,) = [r.getMessage() for r in caplog.records]
        assert CONFIGMAP in line and "is forbidden" in line and "kept for the next try" in line

        history.fail = None
        clock.now = T0 + 30
        runs.finished(completed("b", "u-b", T0 + 20))
        await runs.flush()
        assert history.calls == [
            (("ml/a", "research", 10.0, T0 + 10), ("ml/b", "research", 10.0, T0 + 30))
        ]
        assert not runs.buffered and recorded == [2]

    asyncio.run(scenario())


def test_while_it_cannot_write_the_oldest_runs_go_first(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(run_times_writer, "BUFFERED", 2)
    clock = Clock()
    runs = RunTimesWriter(ClusterState(), History().write, wall=lambda: clock.now)
    runs.attach()
    with caplog.at_level(logging.WARNING, logger=run_times_writer.__name__):
        for index, name in enumerate("abc"):
            clock.now = T0 + 10 * (index + 1)
            runs.finished(completed(name, f"u-{name}", T0))
    assert [owner for owner, *_ in runs.buffered] == ["ml/b", "ml/c"]
    assert any("dropped the 1 oldest" in r.getMessage() for r in caplog.records)


def test_a_replica_that_does_not_lead_writes_nothing() -> None:
    async def scenario() -> None:
        clock = Clock()
        history, serving = History(), asyncio.Event()
        runs = RunTimesWriter(ClusterState(), history.write, ready=serving, interval=0.02)
        runs.wall = lambda: clock.now
        runs.attach()
        task = asyncio.create_task(runs.run())
        clock.now = T0 + 5
        runs.finished(completed("a", "u-a", T0))
        await asyncio.sleep(0.2)
        assert history.calls == []  # a standby: it never serves

        serving.set()  # it leads, its cache whole
        await asyncio.wait_for(history.written.wait(), 2)
        assert history.calls == [(("ml/a", "research", 5.0, T0 + 5),)]

        serving.clear()  # it no longer leads (the process is ending)
        runs.finished(completed("b", "u-b", T0))
        await asyncio.sleep(0.2)
        task.cancel()
        assert len(history.calls) == 1
        assert [owner for owner, *_ in runs.buffered] == ["ml/b"]

    asyncio.run(scenario())
