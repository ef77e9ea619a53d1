"""The extender's batch metrics: how long gangs took from their PodGroup's creation to their first
admission and their first stand (observed where admission and binding happen, once per PodGroup:
a gang that waits again observes nothing more, however its pods show it ran), the gangs waiting by
queue and cause (dated from this wait for a gang that stood before, from creation for one that
never did; gangs gone since the ledger's last walk left out), the queues' guarantees and other
resources, preemption victims by reason (each pod once), call latency for every result, and
ProvisioningRequests by state. Times are read against a clock the test holds, except through the
running app, which reads the wall clock (checked within a few seconds)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from extender.actions.bind import BindError
from extender.api.objects import Pod
from extender.api.provisioning import ProvisioningRequest
from extender.api.resources import Resources
from extender.api.scale_up import SCALE_UP_ANNOTATION
from extender.api.scheduling import GroupKind, PodGroup
from extender.api.times import rfc3339
from extender.cache.state import ClusterState
from extender.framework.engine import (
    Engine,
    GangView,
    Preemption,
    QueueView,
    Unit,
    request_body,
    view_gang,
)
from extender.framework.policy import build_policy, load_policy
from extender.plugins import REGISTRY
from extender.server.app import make_app
from extender.server.gang_waits import GangHistory, gang_waits
from extender.server.keys import ENGINE
from extender.server.metrics import (
    ExtenderMetrics,
    QueueFigures,
    QueueGauges,
    RequestStates,
)
from extender.server.preemptor import Preemptor
from tests.builders import (
    PodBuilder,
    cluster,
    make_group,
    make_node,
    make_pod,
    make_queue,
    running,
)
from tests.engines import make_engine, preempting_engine

NOW = 1_800_000_000.0  # the wall clock's reading in these tests (Unix seconds)
DAYS = 2 * 86_400.0  # the age of the long-running Jobs below
POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
ENGINE_POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}]}],
}
Samples = dict[tuple[str, frozenset[Any]], float]


def samples(collector: Collector | CollectorRegistry) -> Samples:
    """Every sample the collector gives, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in collector.collect()
        for sample in family.samples
    }


def value(collector: Collector | CollectorRegistry, name: str, **labels: str) -> float | None:
    return samples(collector).get((name, frozenset(labels.items())))


def made(seconds_ago: float, now: float = NOW) -> str:
    return rfc3339(now - seconds_ago)


def _gang(group: PodGroup | None, *, key: str = "default/g", bound: int = 0) -> GangView:
    """Gang `g` of `group` with `bound` members running on n1 and one pending."""
    ran = [make_pod(f"g-{i}").uid(f"g-{i}").group("g").on("n1").model() for i in range(bound)]
    pending = [make_pod("g-new").uid("g-new").group("g").model()]
    return GangView(group.key if group is not None else key, group, ran, [], pending)


# -- time to admission and to bound ------------------------------------------------------------


@pytest.mark.parametrize("kind", list(GroupKind))
@pytest.mark.parametrize(
    ("queue", "created", "observed"),
    [
        pytest.param("ml", made(90), 90.0, id="90 s after creation"),
        pytest.param("default", made(86_400 + 5), 86_405.0, id="a day: past the last bucket"),
        pytest.param("ml", made(-30), 0.0, id="clock behind the API server's: 0"),
        pytest.param("ml", None, None, id="no creationTimestamp: nothing observed"),
    ],
)
def test_times_are_observed_from_the_group_creation_by_queue(
    kind: GroupKind, queue: str, created: str | None, observed: float | None
) -> None:
    metrics = ExtenderMetrics(dict, clock=lambda: NOW)
    group = make_group("g").queue(queue)
    if created is not None:
        group = group.set("metadata.creationTimestamp", created)
    gang = _gang(group.model(kind))
    metrics.admitted(gang)
    metrics.stood(gang)
    assert value(metrics.registry, "lahar_gangs_admitted_total") == 1
    for histogram in ("lahar_gang_time_to_admission_seconds", "lahar_gang_time_to_bound_seconds"):
        assert value(metrics.registry, f"{histogram}_sum", queue=queue) == observed
        count = value(metrics.registry, f"{histogram}_count", queue=queue)
        assert count == (None if observed is None else 1)


def test_a_gang_whose_group_is_gone_is_counted_and_not_timed() -> None:
    metrics = ExtenderMetrics(dict, clock=lambda: NOW)
    metrics.admitted(_gang(None))
    metrics.stood(_gang(None))
    assert value(metrics.registry, "lahar_gangs_admitted_total") == 1
    names = {name for name, _ in samples(metrics.registry)}
    assert not any(name.startswith("lahar_gang_time_to_") for name in names)


def test_the_buckets_run_from_a_second_to_a_day() -> None:
    metrics = ExtenderMetrics(dict, clock=lambda: NOW)
    metrics.admitted(_gang(make_group("g").set("metadata.creationTimestamp", made(3)).model()))
    bounds = [
        float(dict(labels)["le"])
        for name, labels in samples(metrics.registry)
        if name == "lahar_gang_time_to_admission_seconds_bucket" and dict(labels)["le"] != "+Inf"
    ]
    assert min(bounds) == 1 and max(bounds) == 86_400


@dataclass(frozen=True)
class Event:
    """The gang admitted, or its minMember-th member bound: its PodGroup's UID, and how many of
    its members run already."""

    what: str  # admitted | stood
    uid: str = "uid-1"
    bound: int = 0


@pytest.mark.parametrize(
    ("events", "admissions", "stands"),
    [
        pytest.param([Event("admitted"), Event("stood")], 1, 1, id="its first wait"),
        pytest.param(
            [
                Event("admitted"),
                Event("stood", bound=2),
                Event("admitted", bound=1),
                Event("stood", bound=2),
            ],
            1,
            1,
            id="a member lost after it ran: waits again, nothing observed",
        ),
        pytest.param(
            [Event("admitted"), Event("stood", bound=2), Event("admitted"), Event("stood")],
            1,
            1,
            id="its Job restarted whole, every pod new: nothing observed",
        ),
        pytest.param(
            [Event("admitted"), Event("admitted"), Event("stood")],
            1,
            1,
            id="released by the barrier's timeout, admitted again: one of each, from creation",
        ),
        pytest.param(
            [Event("admitted", bound=1), Event("stood", bound=2)],
            0,
            0,
            id="first seen by this process with a member running (a restart): it ran before",
        ),
        pytest.param(
            [Event("stood", bound=2)], 0, 0, id="admitted before a restart, stands after it"
        ),
        pytest.param(
            [
                Event("admitted"),
                Event("stood", bound=2),
                Event("admitted", uid="uid-2"),
                Event("stood", uid="uid-2", bound=2),
            ],
            2,
            2,
            id="the PodGroup deleted and made again under its name: a new gang",
        ),
    ],
)
def test_a_podgroup_is_timed_at_its_first_admission_and_first_stand_only(
    events: list[Event], admissions: int, stands: int
) -> None:
    metrics = ExtenderMetrics(dict, clock=lambda: NOW)
    for event in events:
        group = make_group("g").queue("ml").set("metadata.uid", event.uid)
        gang = _gang(group.set("metadata.creationTimestamp", made(DAYS)).model(), bound=event.bound)
        (metrics.admitted if event.what == "admitted" else metrics.stood)(gang)
    assert value(metrics.registry, "lahar_gangs_admitted_total") == sum(
        event.what == "admitted" for event in events
    )
    for histogram, observed in (("admission", admissions), ("bound", stands)):
        name = f"lahar_gang_time_to_{histogram}_seconds"
        assert (value(metrics.registry, f"{name}_count", queue="ml") or 0) == observed
        assert (value(metrics.registry, f"{name}_sum", queue="ml") or 0) == observed * DAYS


@pytest.mark.parametrize(
    ("bound", "first"),
    [
        pytest.param(1, False, id="its pods show it ran: still not its first"),
        pytest.param(0, True, id="nothing of it left bound: read as new"),
    ],
)
def test_a_gang_the_history_forgot_is_known_by_its_pods(bound: int, first: bool) -> None:
    history = GangHistory(size=1)
    old = make_group("old").set("metadata.uid", "old").model()
    assert history.first_admission(_gang(old))
    history.first_stand(_gang(old, bound=2))
    assert history.first_admission(_gang(make_group("g").set("metadata.uid", "new").model()))
    assert history.first_admission(_gang(old, bound=bound)) is first  # (the LRU holds one)
    assert history.stood_before(_gang(old, bound=bound)) is not first


def _scrape(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def _metrics(client: TestClient[Any, Any]) -> Samples:
    return _scrape(await (await client.get("/metrics")).text())


def _observed(seen: Samples, histogram: str, queue: str = "q") -> float | None:
    return seen.get(
        (f"lahar_gang_time_to_{histogram}_seconds_count", frozenset({("queue", queue)}))
    )


def _waited(seen: Samples, cause: str, queue: str = "q") -> float | None:
    labels = frozenset({("queue", queue), ("cause", cause)})
    return seen.get(("lahar_gangs_waiting_oldest_seconds", labels))


Binder = Callable[[str, str, str, str], Awaitable[None]]


def _binder(refuse: str = "") -> Binder:
    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        if name == refuse:
            raise BindError(f"pods {name!r} not found")

    return binder


def _member(index: int, cpu: str = "1") -> PodBuilder:
    return make_pod(f"g-{index}").uid(f"g-{index}").cpu(cpu).group("g")


def _gang_scene(
    *, cpu: str, members: int, min_member: int, age: float = 120.0, refuse: str = ""
) -> tuple[ClusterState, web.Application]:
    """Node n1 with `cpu`; gang `g` of queue `q` (members of 1 cpu, PodGroup made `age` seconds
    ago) pending; the app serving it, whose binder refuses pod `refuse`."""
    state = cluster([make_node("n1").cpu(cpu)])
    state.upsert_queue(make_queue("q").model())
    group = make_group("g").queue("q").min_member(min_member).set("metadata.uid", "g-uid")
    state.upsert_pod_group(group.set("metadata.creationTimestamp", made(age, time.time())).model())
    for index in range(members):
        state.upsert_pod(_member(index).model())
    return state, make_app(load_policy(POLICY, REGISTRY), state=state, binder=_binder(refuse))


async def _filter(client: TestClient[Any, Any], pod: PodBuilder) -> str:
    """Why node n1 was refused to the pod ("" when it passed)."""
    body = {"Pod": pod.build(), "Nodes": None, "NodeNames": ["n1"]}
    reply = await (await client.post("/filter", json=body)).json()
    failed = {**(reply["FailedNodes"] or {}), **(reply["FailedAndUnresolvableNodes"] or {})}
    return str(failed.get("n1", ""))


async def _bind(client: TestClient[Any, Any], index: int) -> str:
    body = {"PodName": f"g-{index}", "PodNamespace": "default", "PodUID": f"g-{index}"}
    return str((await (await client.post("/bind", json={**body, "Node": "n1"})).json())["Error"])


def test_the_app_times_a_gang_at_admission_and_when_it_stands_once_per_podgroup() -> None:
    """Through the verbs: the filter call that admits the gang observes its time to admission,
    the bind of its minMember-th member its time to bound; the other member's filter and a
    member bound beyond minMember observe nothing more."""
    _, app = _gang_scene(cpu="8", members=3, min_member=2)

    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            for index in range(2):
                assert await _filter(client, _member(index)) == ""
            seen = await _metrics(client)
            assert _observed(seen, "admission") == 1
            took = seen[("lahar_gang_time_to_admission_seconds_sum", frozenset({("queue", "q")}))]
            assert 119 <= took <= 125
            assert _observed(seen, "bound") is None
            assert list(await asyncio.gather(_bind(client, 0), _bind(client, 1))) == ["", ""]
            assert await _bind(client, 2) == ""  # beyond minMember
            seen = await _metrics(client)
            assert _observed(seen, "admission") == 1
            assert _observed(seen, "bound") == 1
            took = seen[("lahar_gang_time_to_bound_seconds_sum", frozenset({("queue", "q")}))]
            assert 119 <= took <= 125

    asyncio.run(main())


@pytest.mark.parametrize(
    ("lost", "replacements"),
    [
        pytest.param([1], [2], id="one member evicted, the other runs on"),
        pytest.param([0, 1], [2, 3], id="its Job restarted whole: every pod new"),
    ],
)
def test_a_gang_that_ran_for_days_and_waits_again_is_dated_from_this_wait(
    lost: list[int], replacements: list[int]
) -> None:
    """Gang g (two members, made two days ago) runs on n1 (2 cpu); it loses members, and their
    replacements find the node full (another pod took the room): the wait reads seconds, not
    days, and neither its admission again nor its stand again is observed."""
    state, app = _gang_scene(cpu="2", members=2, min_member=2, age=DAYS)

    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            for index in range(2):
                assert await _filter(client, _member(index)) == ""
            assert list(await asyncio.gather(_bind(client, 0), _bind(client, 1))) == ["", ""]
            for index in range(2):  # (the watch sees them bound and running)
                state.upsert_pod(_member(index).on("n1").phase("Running").model())
            for index in lost:
                state.delete_pod(f"g-{index}")
            for index in replacements:
                state.upsert_pod(_member(index).model())
            other = make_pod("other").uid("other").cpu(str(len(lost))).on("n1").phase("Running")
            state.upsert_pod(other.model())
            for index in replacements:
                assert await _filter(client, _member(index)) != ""
            seen = await _metrics(client)
            assert (_waited(seen, "NotEnoughResources") or DAYS) < 60  # not two days
            state.delete_pod("other")
            for index in replacements:
                assert await _filter(client, _member(index)) == ""
            results = await asyncio.gather(*(_bind(client, index) for index in replacements))
            assert results == ["" for _ in replacements]
            seen = await _metrics(client)
            assert seen[("lahar_gangs_admitted_total", frozenset())] == 2
            assert _observed(seen, "admission") == 1
            assert _observed(seen, "bound") == 1

    asyncio.run(main())


@pytest.mark.parametrize(
    ("running_members", "ages_from_creation", "observed"),
    [
        pytest.param(1, False, None, id="a member still runs: dated from this wait"),
        pytest.param(0, True, 1, id="none bound or finished: read as new, from creation"),
    ],
)
def test_after_a_restart_a_gang_waiting_again_is_known_by_its_pods(
    running_members: int, ages_from_creation: bool, observed: int | None
) -> None:
    """A fresh process (nothing remembered) meets gang g, made two days ago, with a member
    pending that does not fit: what its pods show says whether it ran before."""
    state, app = _gang_scene(cpu="1", members=0, min_member=2, age=DAYS)
    for index in range(running_members):
        state.upsert_pod(_member(index).on("n1").phase("Running").model())
    state.upsert_pod(_member(2, cpu="2").model())  # (one too many cpus: it cannot fit)
    if not running_members:
        state.upsert_pod(_member(3).model())

    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            assert await _filter(client, _member(2, cpu="2")) != ""
            seen = await _metrics(client)
            waited = _waited(seen, "NotEnoughResources")
            assert waited is not None
            assert (waited > DAYS - 60) is ages_from_creation
            state.upsert_pod(_member(2).model())
            state.upsert_node(make_node("n1").cpu("4").model())
            assert await _filter(client, _member(2)) == ""
            assert _observed(await _metrics(client), "admission") == observed

    asyncio.run(main())


def test_a_gang_that_never_ran_ages_from_creation_however_often_it_backs_off() -> None:
    """Admitted, then released by the barrier's timeout and backing off: the wait that follows
    reads from its creation, so the alert on a gang backing off again and again can fire."""
    _, app = _gang_scene(cpu="8", members=2, min_member=2, age=3600)

    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            assert await _filter(client, _member(0)) == ""
            app[ENGINE].release("default/g", back_off=True)  # (as the barrier's timeout does)
            assert await _filter(client, _member(0)) != ""
            waited = _waited(await _metrics(client), "BackingOff")
            assert waited is not None
            assert 3599 <= waited <= 3605

    asyncio.run(main())


@pytest.mark.parametrize(
    ("members", "min_member", "refused", "stood", "partial"),
    [
        pytest.param(1, 1, "", 1, 0, id="minMember 1: its one member binds at once"),
        pytest.param(1, 1, "g-0", None, 0, id="minMember 1: that binding refused"),
        pytest.param(2, 2, "", 1, 0, id="minMember 2: bound together"),
        pytest.param(2, 2, "g-1", None, 1, id="partly bound: one refused after the other"),
    ],
)
def test_a_gang_is_timed_as_standing_only_when_its_bindings_are_made(
    members: int, min_member: int, refused: str, stood: int | None, partial: int
) -> None:
    _, app = _gang_scene(cpu="8", members=members, min_member=min_member, refuse=refused)

    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            for index in range(members):
                assert await _filter(client, _member(index)) == ""
            errors = await asyncio.gather(*(_bind(client, index) for index in range(members)))
            assert [bool(error) for error in errors] == [
                f"g-{index}" == refused for index in range(members)
            ]
            seen = await _metrics(client)
            assert _observed(seen, "admission") == 1
            assert _observed(seen, "bound") == stood
            assert seen[("lahar_partial_gangs_total", frozenset())] == partial

    asyncio.run(main())


@pytest.mark.parametrize(
    ("body", "result"),
    [
        pytest.param(
            {"Pod": make_pod("p").build(), "Nodes": None, "NodeNames": ["n1"]}, "ok", id="ok"
        ),
        pytest.param({"Pod": 3}, "bad_request", id="a malformed body"),
    ],
)
def test_call_latency_is_observed_for_every_result(body: dict[str, Any], result: str) -> None:
    state = cluster([make_node("n1").cpu("1")])
    app = make_app(load_policy(POLICY, REGISTRY), state=state, binder=_binder())

    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            await client.post("/filter", json=body)
            seen = await _metrics(client)
            counted = (
                "lahar_extender_requests_total",
                frozenset({("verb", "filter"), ("result", result)}),
            )
            assert seen[counted] == 1
            timed = (
                "lahar_extender_request_duration_seconds_count",
                frozenset({("verb", "filter")}),
            )
            assert seen[timed] == 1

    asyncio.run(main())


# -- gangs waiting -----------------------------------------------------------------------------


def _ask(engine: Engine, state: ClusterState, uid: str) -> None:
    engine.filter(state, state.pods[uid], ["n1"], fit=True)


def _waiting_scene() -> tuple[ClusterState, Engine]:
    """On one 4-cpu node: `big` (two 4-cpu members) refused for want of capacity, made 300 s
    ago; `lost`, in a queue that does not exist, 60 s ago; `ghost`'s pods name a PodGroup that
    does not exist (first seen at the ledger's time 1000, asked again at 1045); `early`'s pod was
    refused for want of its PodGroup at 1000, which was made (in queue `ml`) 10 s before 1045;
    `later` (made 50 s ago) waits in the fair order and was never asked about; `short`, in queue
    `small`, is refused for its queue's capability (made 100 s ago). The ledger's clock reads
    1045, the wall clock `NOW`."""
    state = cluster([make_node("n1").cpu("4")])
    state.upsert_queue(make_queue("small").capability(cpu="1").model())
    groups = [("big", 2, "4", 300, ""), ("lost", 1, "1", 60, "gone"), ("later", 1, "8", 50, "")]
    groups.append(("short", 1, "2", 100, "small"))
    for name, size, cpu, age, queue in groups:
        group = make_group(name).min_member(size).set("metadata.creationTimestamp", made(age))
        state.upsert_pod_group((group.queue(queue) if queue else group).model())
        for index in range(size):
            state.upsert_pod(
                make_pod(f"{name}-{index}").uid(f"{name}-{index}").cpu(cpu).group(name).model()
            )
    for name in ("ghost", "early"):
        state.upsert_pod(make_pod(f"{name}-0").uid(f"{name}-0").cpu("1").group(name).model())
    ticks = [1000.0]
    engine = Engine(build_policy(ENGINE_POLICY, REGISTRY), clock=lambda: ticks[0])
    for uid in ("big-0", "lost-0", "ghost-0", "early-0", "short-0"):
        _ask(engine, state, uid)
    ticks[0] = 1045.0
    _ask(engine, state, "ghost-0")
    early = make_group("early").queue("ml").set("metadata.creationTimestamp", made(10))
    state.upsert_pod_group(early.model())
    return state, engine


def _counts(state: ClusterState, engine: Engine) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (queue, cause): how many gangs wait, and the oldest wait, as the gauges read them."""
    assert engine.gang_rules
    figures = QueueFigures({}, {}, {}, gang_waits(state, engine, NOW, GangHistory()))
    read = samples(QueueGauges(lambda: figures))
    many = {
        (dict(labels)["queue"], dict(labels)["cause"]): count
        for (name, labels), count in read.items()
        if name == "lahar_gangs_waiting"
    }
    return {
        labels: (count, read[("lahar_gangs_waiting_oldest_seconds", _labels(*labels))])
        for labels, count in many.items()
    }


def _labels(queue: str, cause: str) -> frozenset[tuple[str, str]]:
    return frozenset({("queue", queue), ("cause", cause)})


EVERY_WAIT = {
    ("default", "NotEnoughResources"): (1, 300.0),
    ("gone", "NoQueue"): (1, 60.0),
    ("default", "NoPodGroup"): (1, 45.0),  # no PodGroup: since the ledger first saw it wait
    ("ml", "NoPodGroup"): (1, 45.0),  # its pods came first: since the ledger saw them wait
    ("default", "NotAskedYet"): (1, 50.0),
    ("small", "QueueCapability"): (1, 100.0),
}


def test_waiting_gangs_by_queue_and_cause() -> None:
    state, engine = _waiting_scene()
    assert _counts(state, engine) == EVERY_WAIT


def test_a_gang_refused_after_it_waited_unasked_is_counted_once_and_the_oldest_kept() -> None:
    """`later` waits unasked in the fair order, then its pod is asked about and refused for want
    of capacity: the ledger holds it as refused (with the age it had as a contender) and no
    longer as unasked, and it is counted once, beside `big`, the older of the two."""
    state, engine = _waiting_scene()
    assert engine.gang_rules
    assert "default/later" in engine.unasked()
    _ask(engine, state, "later-0")
    assert "default/later" in engine.refused()
    assert "default/later" not in engine.unasked()
    expected = {k: v for k, v in EVERY_WAIT.items() if k != ("default", "NotAskedYet")}
    expected[("default", "NotEnoughResources")] = (2, 300.0)
    assert _counts(state, engine) == expected


@pytest.mark.parametrize(
    ("gone", "uids", "group", "left_out"),
    [
        pytest.param(
            "big",
            ["big-0", "big-1"],
            "default/big",
            ("default", "NotEnoughResources"),
            id="its Job deleted: pods and PodGroup",
        ),
        pytest.param("lost", [], "default/lost", ("gone", "NoQueue"), id="its PodGroup deleted"),
        pytest.param("short", ["short-0"], None, ("small", "QueueCapability"), id="its pods gone"),
        pytest.param(
            "later",
            ["later-0"],
            "default/later",
            ("default", "NotAskedYet"),
            id="never asked about, deleted",
        ),
        pytest.param("ghost", ["ghost-0"], None, ("default", "NoPodGroup"), id="no PodGroup"),
    ],
)
def test_a_gang_deleted_since_the_last_walk_is_not_waiting(
    gone: str, uids: list[str], group: str | None, left_out: tuple[str, str]
) -> None:
    """The ledger still lists it (until its next walk); the gauges leave it out at once."""
    state, engine = _waiting_scene()
    assert engine.gang_rules
    for uid in uids:
        state.delete_pod(uid)
    if group is not None:
        state.delete_pod_group(group)
    listed = {*engine.refused(), *engine.unasked()}
    assert f"default/{gone}" in listed  # (the ledger's lists are the last walk's)
    expected = {k: v for k, v in EVERY_WAIT.items() if k != left_out}
    assert _counts(state, engine) == expected


def test_a_member_being_deleted_is_not_a_gang_waiting() -> None:
    state, engine = _waiting_scene()
    state.upsert_pod(make_pod("lost-0").uid("lost-0").cpu("1").group("lost").deleting().model())
    expected = {k: v for k, v in EVERY_WAIT.items() if k != ("gone", "NoQueue")}
    assert _counts(state, engine) == expected


def test_no_gang_waiting_means_no_waiting_series() -> None:
    gauges = QueueGauges(lambda: QueueFigures({}, {}, {}))
    names = {name for name, _ in samples(gauges)}
    assert not {"lahar_gangs_waiting", "lahar_gangs_waiting_oldest_seconds"} & names


def test_an_admitted_gang_is_not_waiting() -> None:
    state = cluster([make_node("n1").cpu("4")])
    state.upsert_pod_group(make_group("g").set("metadata.creationTimestamp", made(5)).model())
    state.upsert_pod(make_pod("g-0").uid("g-0").cpu("1").group("g").model())
    engine = Engine(build_policy(ENGINE_POLICY, REGISTRY))
    assert engine.gang_rules
    _ask(engine, state, "g-0")
    assert list(engine.admitted()) == ["default/g"]
    assert gang_waits(state, engine, NOW, GangHistory()) == []


# -- queue guarantee and other resources -------------------------------------------------------


GPU = "nvidia.com/gpu"


def _queue_gauges() -> QueueGauges:
    """Queue `gpu`: a guarantee and a capability in cpu, memory and GPUs, holding 2 of the 4
    GPUs it deserves; queue `plain`: no guarantee, uncapped, deserving GPUs and holding none."""
    capped = (
        make_queue("gpu")
        .capability(cpu="16", memory="64Gi", **{GPU: "8"})
        .guarantee(cpu="4", memory="8Gi", **{GPU: "2"})
    )
    gpu = Resources({GPU: 2, "cpu": 6000, "pods": 3})
    views = {
        "gpu": QueueView(
            capped.model(),
            allocated=gpu,
            deserved=Resources({GPU: 4, "cpu": 8000, "pods": 110}),
        ),
        "plain": QueueView(
            make_queue("plain").model(),
            deserved=Resources({GPU: 4, "cpu": 8000, "memory": 2**30}),
        ),
    }
    return QueueGauges(lambda: QueueFigures(views, {}, {}))


@pytest.mark.parametrize(
    ("name", "queue", "expected"),
    [
        ("lahar_queue_guarantee_milli_cpu", "gpu", 4000.0),
        ("lahar_queue_guarantee_memory_bytes", "gpu", 8 * 2.0**30),
        ("lahar_queue_guarantee_milli_cpu", "plain", None),  # nothing guaranteed: absent
        ("lahar_queue_guarantee_memory_bytes", "plain", None),
        ("lahar_queue_capacity_milli_cpu", "gpu", 16000.0),
        ("lahar_queue_allocated_milli_cpu", "plain", 0.0),
    ],
)
def test_queue_guarantee(name: str, queue: str, expected: float | None) -> None:
    assert value(_queue_gauges(), name, queue=queue) == expected


@pytest.mark.parametrize(
    ("field", "queue", "resource", "expected"),
    [
        ("allocated", "gpu", GPU, 2.0),
        ("allocated", "gpu", "pods", 3.0),
        ("deserved", "gpu", GPU, 4.0),
        ("deserved", "gpu", "pods", 110.0),
        ("capacity", "gpu", GPU, 8.0),
        ("guarantee", "gpu", GPU, 2.0),
        ("allocated", "plain", GPU, 0.0),  # deserved but not held: 0, not absent
        ("capacity", "plain", GPU, None),  # uncapped: absent
        ("guarantee", "plain", GPU, None),  # nothing guaranteed: absent
        ("allocated", "gpu", "cpu", None),  # cpu and memory have gauges of their own
        ("deserved", "plain", "memory", None),
    ],
)
def test_queue_scalar_resources(
    field: str, queue: str, resource: str, expected: float | None
) -> None:
    name = f"lahar_queue_{field}_scalar_resources"
    assert value(_queue_gauges(), name, queue=queue, resource=resource) == expected


# -- preemption victims by reason --------------------------------------------------------------


class _Evictions:
    """Evicts every pod but those already `gone` (the Eviction API answers that it was)."""

    def __init__(self, gone: Iterable[str] = ()) -> None:
        self.gone = set(gone)

    async def __call__(self, namespace: str, name: str, uid: str, dry_run: bool) -> bool:
        return uid not in self.gone


def _preemption(state: ClusterState, victims: Iterable[tuple[str, str]]) -> Preemption:
    """For gang `urgent` (queue `ml`), the whole gangs `victims` (name, queue) running on n0."""
    units = []
    for name, queue in victims:
        if f"default/{name}" not in state.pod_groups:
            running(state, name, ["n0", "n0"], cpu="1", queue=queue)
        pods: list[Pod] = [p for p in state.pods.values() if p.metadata.name.startswith(f"{name}-")]
        units.append(Unit(f"default/{name}", queue, 0, tuple((p, "n0") for p in pods), True))
    return Preemption(view_gang(state, "default/urgent"), units)


@pytest.mark.parametrize(
    ("passes", "gone", "counted"),
    [
        pytest.param(
            [("evict", [("low", "ml")])], [], {"preempt": 2, "reclaim": 0}, id="same queue"
        ),
        pytest.param(
            [("propose", [("other", "batch")])],
            [],
            {"preempt": 0, "reclaim": 2},
            id="other queue: reclaim, through the scheduler",
        ),
        pytest.param(
            [("evict", [("low", "ml"), ("other", "batch")])],
            [],
            {"preempt": 2, "reclaim": 2},
            id="both at once",
        ),
        pytest.param(
            [("propose", [("low", "ml")])] * 3,
            [],
            {"preempt": 2, "reclaim": 0},
            id="the scheduler asks again for each member: each victim once",
        ),
        pytest.param(
            [("propose", [("low", "ml")]), ("evict", [("low", "ml"), ("other", "batch")])],
            [],
            {"preempt": 2, "reclaim": 2},
            id="proposed, then evicted by Lahar with another: each once",
        ),
        pytest.param(
            [("evict", [("low", "ml")])],
            ["uid-default-low-0"],
            {"preempt": 1, "reclaim": 0},
            id="a victim already gone: not counted",
        ),
    ],
)
def test_preemption_victims_by_reason(
    passes: list[tuple[str, list[tuple[str, str]]]], gone: list[str], counted: dict[str, int]
) -> None:
    state = cluster([make_node("n0").cpu("8")])
    for queue in ("ml", "batch"):
        state.upsert_queue(make_queue(queue).model())
    state.upsert_pod_group(make_group("urgent").queue("ml").model())
    state.upsert_pod(make_pod("urgent-0").uid("urgent-0").cpu("8").group("urgent").model())
    engine = preempting_engine(interval=0.01)
    metrics = ExtenderMetrics(dict)

    async def main() -> None:
        preemptor = Preemptor(
            state, engine, _Evictions(gone), lambda key, event: None, ready=asyncio.Event()
        )
        metrics.count_victims(preemptor)  # (as the app wires it)
        for how, victims in passes:
            preemption = _preemption(state, victims)
            if how == "evict":
                assert await preemptor.carry_out(preemption) is True
            else:
                preemptor.proposed(preemption)

    asyncio.run(main())
    for reason, pods in counted.items():
        total = value(metrics.registry, "lahar_pod_preemption_victims_total", reason=reason)
        assert total == pods


# -- ProvisioningRequests by state -------------------------------------------------------------


Requested = tuple[str, list[dict[str, str]]]  # a request's name, its conditions


def _request(name: str, *conditions: tuple[str, str]) -> Requested:
    return name, [{"type": kind, "status": status} for kind, status in conditions]


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        pytest.param([], {}, id="none: every state at 0"),
        pytest.param([_request("a")], {"Pending": 1}, id="no condition yet"),
        pytest.param(
            [_request("a", ("Accepted", "True")), _request("b", ("Accepted", "True"))],
            {"Accepted": 2},
            id="accepted",
        ),
        pytest.param(
            [_request("a", ("Accepted", "True"), ("Provisioned", "False"))],
            {"Accepted": 1},
            id="no capacity found yet",
        ),
        pytest.param(
            [
                _request("a", ("Accepted", "True"), ("Provisioned", "True")),
                _request(
                    "b", ("Accepted", "True"), ("Provisioned", "True"), ("BookingExpired", "True")
                ),
                _request("c", ("Failed", "True")),
                _request("d", ("Provisioned", "True"), ("CapacityRevoked", "True")),
            ],
            {"Provisioned": 1, "BookingExpired": 1, "Failed": 1, "CapacityRevoked": 1},
            id="each state",
        ),
    ],
)
def test_provisioning_requests_by_state(
    requests: list[Requested], expected: dict[str, int]
) -> None:
    """Each request stands for a gang of namespace ml that waits for nodes (a 4-cpu member, a
    1-cpu node, a queue that asks for nodes by ProvisioningRequest): the engine's book notes
    each one's state as the provisioner's pass reads them."""
    state = cluster([make_node("n0").cpu("1")])
    state.upsert_queue(make_queue("q").annotate(SCALE_UP_ANNOTATION, "provisioningRequest").model())
    engine = make_engine()
    for name, _ in requests:
        state.upsert_pod_group(make_group(name).ns("ml").queue("q").model())
        state.upsert_pod(make_pod(f"{name}-0").ns("ml").cpu("4").group(name).model())
        assert engine.filter(state, state.pods[f"uid-ml-{name}-0"], []).gang_reason
    for name, conditions in requests:
        body = request_body(state.pod_groups[f"ml/{name}"], name, 1, [(f"{name}-p0", 1)])
        body["status"] = {"conditions": conditions}
        state.upsert_provisioning_request(ProvisioningRequest.model_validate(body))
    engine.provisioning_plan(state, 0.0)  # (as the provisioner's pass reads them)
    gauge = RequestStates()
    gauge.read = engine.request_phases  # (as the app wires it)
    states = ("Pending", "Accepted", "Provisioned", "Failed", "BookingExpired", "CapacityRevoked")
    for state_name in states:
        counted = value(gauge, "lahar_provisioning_requests", state=state_name)
        assert counted == expected.get(state_name, 0)


def test_provisioning_requests_read_nothing_until_the_provisioner_says() -> None:
    metrics = ExtenderMetrics(dict)
    assert value(metrics.registry, "lahar_provisioning_requests", state="Pending") == 0
