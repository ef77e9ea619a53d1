"""The watchdog adapter, with fake reads, eviction and clocks: it reads only as a ready standby,
evicts once with one WARNING line, counts it, survives refusals and failing reads, and retries."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from extender.kube import KubeError
from extender.server.takeover import Rule, TakeOver, Wait
from extender.server.watchdog import Watchdog

RULE = Rule("lahar-system", "lahar-scheduler", "sched-b", 20.0)
WALL = 1_700_000_000.0


class Cluster:
    """The Lease, the holder's pod, and the evictions asked for."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = {
            "spec": {
                "holderIdentity": "sched-a_1b2c",
                "renewTime": "2023-11-14T22:13:15.000000Z",  # WALL - 5
                "leaseDurationSeconds": 15,
            }
        }
        self.ready = False
        self.pods_read: list[tuple[str, str]] = []
        self.evictions: list[tuple[str, str, str, bool]] = []
        self.refuse: Exception | None = None
        self.gone = False
        self.failing: Exception | None = None

    async def read_lease(self) -> dict[str, Any] | None:
        if self.failing is not None:
            raise self.failing
        return self.lease

    async def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.pods_read.append((namespace, name))
        return {
            "metadata": {"name": name, "uid": f"uid-{name}"},
            "status": {"containerStatuses": [{"name": "extender", "ready": self.ready}]},
        }

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> bool:
        self.evictions.append((namespace, name, uid, dry_run))
        if self.refuse is not None:
            raise self.refuse
        return not self.gone


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def watchdog(
    cluster: Cluster, clock: Clock, standing: list[tuple[bool, str | None]] | None = None
) -> Watchdog:
    state = standing or [(False, None)]
    return Watchdog(
        RULE,
        standing=lambda: state[0],
        read_lease=cluster.read_lease,
        read_pod=cluster.read_pod,
        evict=cluster.evict,
        clock=clock,
        wall=lambda: WALL,
    )


def steps(dog: Watchdog, clock: Clock, times: list[float]) -> list[str]:
    async def run() -> list[str]:
        kinds = []
        for now in times:
            clock.now = now
            kinds.append(type(await dog.step()).__name__)
        return kinds

    return asyncio.run(run())


def test_it_evicts_the_leader_once_saying_so_and_counts_it(caplog: Any) -> None:
    cluster, clock = Cluster(), Clock()
    dog = watchdog(cluster, clock)
    counted: list[int] = []
    dog.on_evicted = lambda: counted.append(1)
    with caplog.at_level(logging.INFO, logger="extender.server.watchdog"):
        kinds = steps(dog, clock, [0, 2, 20, 22, 24, 90])
    assert kinds == ["Wait", "Wait", "Wait", "TakeOver", "Wait", "Wait"]
    assert cluster.evictions == [("lahar-system", "sched-a", "uid-sched-a", False)]
    assert cluster.pods_read[0] == ("lahar-system", "sched-a")
    assert counted == [1]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "evicting lahar-system/sched-a: its extender has not been ready for 22 s while its "
        "kube-scheduler holds Lease lahar-system/lahar-scheduler; this replica's scheduler takes "
        "over"
    ]


def test_a_ready_extender_is_never_evicted() -> None:
    cluster, clock = Cluster(), Clock()
    cluster.ready = True
    kinds = steps(watchdog(cluster, clock), clock, [0, 30, 60, 600])
    assert kinds == ["Nothing"] * 4
    assert cluster.evictions == []


def test_a_leader_or_an_unready_standby_reads_nothing_and_evicts_nothing() -> None:
    for standing in [(True, None), (False, "the cache is not synced yet")]:
        cluster, clock = Cluster(), Clock()
        kinds = steps(watchdog(cluster, clock, [standing]), clock, [0, 30, 60])
        assert kinds == ["Nothing"] * 3
        assert cluster.pods_read == [] and cluster.evictions == []


def test_a_refused_eviction_is_logged_and_tried_again_later(caplog: Any) -> None:
    cluster, clock = Cluster(), Clock()
    cluster.refuse = KubeError(
        "evicting pod lahar-system/sched-a: Cannot evict pod as it would violate the pod's "
        "disruption budget. (HTTP 429)"
    )
    dog = watchdog(cluster, clock)
    with caplog.at_level(logging.WARNING, logger="extender.server.watchdog"):
        kinds = steps(dog, clock, [0, 21, 25, 31])
    assert kinds == ["Wait", "TakeOver", "Wait", "TakeOver"]
    assert len(cluster.evictions) == 2
    assert any("disruption budget" in r.getMessage() for r in caplog.records)
    cluster.refuse = None
    assert steps(dog, clock, [41]) == ["TakeOver"]
    assert steps(dog, clock, [43]) == ["Wait"]  # evicted: never again


def test_a_pod_already_gone_is_no_eviction() -> None:
    cluster, clock = Cluster(), Clock()
    cluster.gone = True
    dog = watchdog(cluster, clock)
    counted: list[int] = []
    dog.on_evicted = lambda: counted.append(1)
    assert steps(dog, clock, [0, 21]) == ["Wait", "TakeOver"]
    assert counted == [] and dog.watch.since is None


def test_failing_reads_wait_warn_once_and_crash_nothing(caplog: Any) -> None:
    cluster, clock = Cluster(), Clock()
    cluster.failing = KubeError("GET /apis/...: connection refused")
    dog = watchdog(cluster, clock)
    with caplog.at_level(logging.INFO, logger="extender.server.watchdog"):
        assert steps(dog, clock, [0, 2, 4]) == ["Wait"] * 3
        cluster.failing = None
        assert steps(dog, clock, [6]) == ["Wait"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "connection refused" in warnings[0].getMessage()
    assert any("works again" in r.getMessage() for r in caplog.records)
    assert cluster.evictions == []


@pytest.mark.parametrize("holder", ["", "sched-b_77"])
def test_a_free_or_own_lease_reads_no_pod(holder: str) -> None:
    cluster, clock = Cluster(), Clock()
    assert cluster.lease is not None
    cluster.lease["spec"]["holderIdentity"] = holder
    assert steps(watchdog(cluster, clock), clock, [0, 30]) == ["Nothing"] * 2
    assert cluster.pods_read == []


def test_run_looks_every_interval_until_cancelled() -> None:
    cluster, clock = Cluster(), Clock()
    dog = watchdog(cluster, clock)
    dog.interval = 0.001
    outcomes: list[object] = []
    step = dog.step

    async def run() -> None:
        three = asyncio.Event()

        async def counted() -> Any:
            outcome = await step()
            outcomes.append(outcome)
            if len(outcomes) == 3:
                three.set()
            return outcome

        dog.step = counted  # type: ignore[method-assign]
        task = asyncio.create_task(dog.run())
        await three.wait()
        task.cancel()

    asyncio.run(run())
    assert all(isinstance(o, Wait | TakeOver) for o in outcomes)


def test_it_says_when_the_leaders_extender_goes_unready_and_when_it_is_ready_again(
    caplog: Any,
) -> None:
    cluster, clock = Cluster(), Clock()
    dog = watchdog(cluster, clock)
    with caplog.at_level(logging.INFO, logger="extender.server.watchdog"):
        steps(dog, clock, [0, 2])
        cluster.ready = True
        steps(dog, clock, [4, 6])
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert said == [
        "the extender of lahar-system/sched-a has not been ready for 0 s; this replica takes "
        "over after 20 s (Lease lahar-system/lahar-scheduler)",
        "the extender of lahar-system/sched-a is ready again",
    ]
