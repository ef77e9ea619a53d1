"""A snapshot saved by `--save` reads back as the very trace that was taken, and plays the same:
what `--from FILE` replays offline is what the live cluster gave."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from extender.api.run_times import RunHistory
from extender.api.scheduling import GroupKind
from extender.api.times import parse_time, rfc3339
from extender.cli.cluster_snapshot import Taken, policy_path, save
from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.simulate.from_cluster import snapshot
from extender.simulate.run import Simulation, SimulationOutcome
from extender.simulate.trace import Trace, load_trace
from tests.builders import (
    RawClusterBuilder,
    make_group,
    make_hyper_node,
    make_job,
    make_node,
    make_pod,
    make_queue,
    make_raw_cluster,
)

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
TAKEN_AT = parse_time("2026-11-29T10:00:00Z") or 0.0
ANNOTATION = "lahar.io/expected-run-time"


def ago(minutes: float) -> str:
    return rfc3339(TAKEN_AT - minutes * 60)


def nodes_only() -> RawClusterBuilder:
    return make_raw_cluster().nodes(make_node("n0"), make_node("n1").cpu("16"))


def running_and_waiting() -> RawClusterBuilder:
    """A gang running 20 of its 45 minutes on both nodes, two waiting behind it."""
    raw = make_raw_cluster().nodes(make_node("n0").cpu("4"), make_node("n1").cpu("4"))
    raw.group(make_group("a").min_member(2).created(ago(30)).annotate(ANNOTATION, "30m-1h"))
    for index in range(2):
        pod = make_pod(f"a-{index}").cpu("3").group("a").on(f"n{index}").started(ago(20))
        raw.pods(pod)
    raw.group(make_group("b").min_member(1).created(ago(10)).annotate(ANNOTATION, "10m"))
    raw.pods(make_pod("b-0").cpu("2").group("b"))
    raw.jobs(make_job("c").task("worker", 2, cpu="2").set("spec.runningEstimate", "15m"))
    raw.group(make_group("c-uid-c").min_member(2).created(ago(5)).phase("Pending"))
    return raw


def every_kind() -> RawClusterBuilder:
    """Gangs of each PodGroup kind in a queue tree, with PriorityClasses and what other
    schedulers hold."""
    raw = make_raw_cluster().nodes(
        *(make_node(f"n{i}").cpu("8").memory("16Gi") for i in range(3)),
        make_node("gpu-0").offers("nvidia.com/gpu", "4").label("pool", "gpu").taint("gpu"),
        make_node("old").cordoned(),
    )
    raw.queues(
        make_queue("root"),
        make_queue("ml").weight(3).capability(cpu="20").guarantee(cpu="2"),
        make_queue("team-a").parent("ml").deserved(cpu="8").set("spec.priority", 2),
        make_queue("closed").state("Closed").reclaimable(False),
    )
    raw.priority_class("high", 1000)
    kinds = (GroupKind.VOLCANO, GroupKind.COSCHEDULING, GroupKind.NATIVE)
    for number, kind in enumerate(kinds):
        name = f"g{number}"
        group = make_group(name).min_member(2).queue("team-a").created(ago(10 - number))
        if kind is GroupKind.COSCHEDULING:
            group.set("spec.scheduleTimeoutSeconds", 30)
        raw.group(group, kind)
        for index in range(2):
            pod = make_pod(f"{name}-{index}").cpu("3").memory("2Gi").group(name, kind)
            raw.pods(pod.priority(1000).priority_class("high").annotate(ANNOTATION, "20m"))
    gpu = make_group("gpu").min_member(1).min_task("trainer", 1).created(ago(1))
    raw.group(gpu)
    raw.pods(
        make_pod("gpu-0")
        .cpu("2")
        .request("nvidia.com/gpu", "2")
        .group("gpu")
        .task("trainer")
        .node_selector("pool", "gpu")
        .tolerate("gpu", "")
        .requires("pool", "In", "gpu")
        .annotate(ANNOTATION, "5m-15m")
    )
    raw.pods(
        make_pod("ds-0").cpu("100m").memory("64Mi").on("n0").owned_by("apps/v1", "DaemonSet", "x"),
        make_pod("ds-1").cpu("100m").memory("64Mi").on("n1").owned_by("apps/v1", "DaemonSet", "x"),
        make_pod("web").cpu("1").on("n1").scheduler("default-scheduler"),
        make_pod("queued").cpu("1").scheduler("default-scheduler"),
    )
    return raw


def topology() -> RawClusterBuilder:
    """Two switches under a spine; a gang that must stay within one switch."""
    raw = make_raw_cluster().nodes(
        *(make_node(f"n{i}").cpu("4").label("rack", f"r{i // 2}") for i in range(4))
    )
    raw.hyper_nodes(
        make_hyper_node("s0").tier(1, "switch").nodes("n0", "n1"),
        make_hyper_node("s1").tier(1, "switch").labelled(rack="r1"),
        make_hyper_node("spine").tier(2, "spine").hyper_nodes("s0", "s1"),
    )
    raw.group(make_group("ring").min_member(2).network(tier=1).annotate(ANNOTATION, "1h"))
    raw.pods(*(make_pod(f"ring-{i}").cpu("4").group("ring") for i in range(2)))
    raw.group(make_group("held").min_member(1).phase("Running").annotate(ANNOTATION, "2h"))
    raw.pods(make_pod("held-0").cpu("1").group("held").on("n2").started(ago(30)))
    return raw


@pytest.mark.parametrize("cluster", [nodes_only, running_and_waiting, every_kind, topology])
def test_a_saved_snapshot_loads_as_the_trace_taken_and_plays_the_same(
    tmp_path: Path, cluster: Callable[[], RawClusterBuilder]
) -> None:
    taken = snapshot(cluster().build(), TAKEN_AT, RunHistory())
    policy_text = POLICY.read_text(encoding="utf-8")
    policy = load_policy(POLICY, REGISTRY)
    kept = Taken(taken.trace, policy, policy_text, str(POLICY), "default", RunHistory(), None)
    written = save(kept, tmp_path / "snapshot.yaml")

    assert written == [tmp_path / "snapshot.yaml", tmp_path / "snapshot.policy.yaml"]
    assert policy_path(tmp_path / "snapshot.yaml").read_text(encoding="utf-8") == policy_text
    loaded = load_trace(tmp_path / "snapshot.yaml")
    assert loaded == taken.trace
    assert loaded.model_dump() == taken.trace.model_dump()

    before, after = (
        Simulation(trace, policy, "lahar", horizon=6 * 3600).run()
        for trace in (taken.trace, loaded)
    )
    assert starts(before) == starts(after)
    assert all(started is not None for started, _ in starts(before).values())
    assert [(i.pod, i.node, i.start, i.end) for i in before.intervals] == [
        (i.pod, i.node, i.start, i.end) for i in after.intervals
    ]


def starts(outcome: SimulationOutcome) -> dict[str, tuple[float | None, float | None]]:
    """Each job's start and end."""
    return {key: (job.started, job.finished) for key, job in outcome.jobs.items()}


def test_the_snapshots_played_here_hold_what_they_are_meant_to() -> None:
    """The table above covers running, waiting and expected gangs, every kind, constraints,
    occupied capacity and a topology: a trace short of one would round-trip trivially."""
    traces: dict[str, Trace] = {
        cluster.__name__: snapshot(cluster().build(), TAKEN_AT, RunHistory()).trace
        for cluster in (running_and_waiting, every_kind, topology)
    }
    running = traces["running_and_waiting"]
    assert [(j.name, j.started is not None) for j in running.jobs] == [
        ("a", True),
        ("b", False),
        ("c", False),
    ]
    kinds = traces["every_kind"]
    assert [j.kind for j in kinds.jobs] == ["volcano", "coscheduling", "native", "volcano"]
    assert kinds.occupied and kinds.priority_classes == {"high": 1000}
    assert kinds.jobs[-1].tasks[0].affinity is not None
    assert {q.name for q in kinds.queues} == {"ml", "team-a", "closed"}
    assert traces["topology"].topology is not None
