"""The extender's batch metrics: how long gangs took from their PodGroup's creation to admission
and to standing bound (observed where admission and binding happen, once per admission), the
gangs waiting by queue and cause, the queues' guarantees and other resources, preemption victims
by reason, and ProvisioningRequests by state. Times are read against a clock the test holds,
except through the running app, which reads the wall clock (checked within a few seconds)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from extender.api.objects import Pod
from extender.api.provisioning import ProvisioningRequest
from extender.api.resources import Resources
from extender.api.scheduling import GroupKind
from extender.api.times import rfc3339
from extender.cache.state import ClusterState
from extender.framework.policy import build_policy, load_policy
from extender.framework.session import Engine
from extender.gangs.members import view_gang
from extender.gangs.queues import QueueView
from extender.gangs.scale_up import Asked, ScaleUps
from extender.plugins import REGISTRY
from extender.preemption.plan import Preemption
from extender.preemption.settings import PreemptionSettings
from extender.preemption.victims import Rules, Unit
from extender.server.app import make_app
from extender.server.metrics import (
    ExtenderMetrics,
    QueueFigures,
    QueueGauges,
    RequestStates,
    gang_waits,
    request_states,
)
from extender.server.preemptor import Preemptor
from tests.builders import cluster, make_group, make_node, make_pod, make_queue, running

NOW = 1_800_000_000.0  # the wall clock's reading in these tests (Unix seconds)
POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
ENGINE_POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}]}],
}


def samples(collector: Collector | CollectorRegistry) -> dict[tuple[str, frozenset[Any]], float]:
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
    metrics.admitted(group.model(kind))
    metrics.stood(group.model(kind))
    assert value(metrics.registry, "lahar_gangs_admitted_total") == 1
    for histogram in ("lahar_gang_time_to_admission_seconds", "lahar_gang_time_to_bound_seconds"):
        assert value(metrics.registry, f"{histogram}_sum", queue=queue) == observed
        count = value(metrics.registry, f"{histogram}_count", queue=queue)
        assert count == (None if observed is None else 1)


def test_a_gang_whose_group_is_gone_is_counted_and_not_timed() -> None:
    metrics = ExtenderMetrics(dict, clock=lambda: NOW)
    metrics.admitted(None)
    metrics.stood(None)
    assert value(metrics.registry, "lahar_gangs_admitted_total") == 1
    names = {name for name, _ in samples(metrics.registry)}
    assert not any(name.startswith("lahar_gang_time_to_") for name in names)


def test_the_buckets_run_from_a_second_to_a_day() -> None:
    metrics = ExtenderMetrics(dict, clock=lambda: NOW)
    metrics.admitted(make_group("g").set("metadata.creationTimestamp", made(3)).model())
    bounds = [
        float(dict(labels)["le"])
        for name, labels in samples(metrics.registry)
        if name == "lahar_gang_time_to_admission_seconds_bucket" and dict(labels)["le"] != "+Inf"
    ]
    assert min(bounds) == 1 and max(bounds) == 86_400


def _scrape(text: str) -> dict[tuple[str, frozenset[Any]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_the_app_times_a_gang_at_admission_and_when_it_stands_once_per_admission() -> None:
    """Through the verbs: the filter call that admits the gang observes its time to admission,
    the bind of its minMember-th member its time to bound; the other member's filter and a
    member bound beyond minMember observe nothing more."""
    state = cluster([make_node("n1").cpu("8")])
    state.upsert_queue(make_queue("q").model())
    created = made(120, time.time())
    state.upsert_pod_group(
        make_group("g").queue("q").min_member(2).set("metadata.creationTimestamp", created).model()
    )
    pods = [make_pod(f"g-{i}").uid(f"g-{i}").cpu("1").group("g") for i in range(3)]
    for pod in pods:
        state.upsert_pod(pod.model())

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        return None

    async def scrape(client: TestClient[Any, Any]) -> dict[tuple[str, frozenset[Any]], float]:
        return _scrape(await (await client.get("/metrics")).text())

    def observed(seen: dict[tuple[str, frozenset[Any]], float], histogram: str) -> float | None:
        return seen.get(
            (f"lahar_gang_time_to_{histogram}_seconds_count", frozenset({("queue", "q")}))
        )

    async def bind(client: TestClient[Any, Any], index: int) -> Any:
        body = {"PodName": f"g-{index}", "PodNamespace": "default", "PodUID": f"g-{index}"}
        return await client.post("/bind", json={**body, "Node": "n1"})

    async def main() -> None:
        app = make_app(load_policy(POLICY, REGISTRY), state=state, binder=binder)
        async with TestClient(TestServer(app)) as client:
            for pod in pods[:2]:
                body = {"Pod": pod.build(), "Nodes": None, "NodeNames": ["n1"]}
                assert (await (await client.post("/filter", json=body)).json())["Error"] == ""
            seen = await scrape(client)
            assert observed(seen, "admission") == 1
            took = seen[("lahar_gang_time_to_admission_seconds_sum", frozenset({("queue", "q")}))]
            assert 119 <= took <= 125
            assert observed(seen, "bound") is None
            replies = await asyncio.gather(bind(client, 0), bind(client, 1))
            assert [(await reply.json())["Error"] for reply in replies] == ["", ""]
            assert (await (await bind(client, 2)).json())["Error"] == ""  # beyond minMember
            seen = await scrape(client)
            assert observed(seen, "admission") == 1
            assert observed(seen, "bound") == 1
            took = seen[("lahar_gang_time_to_bound_seconds_sum", frozenset({("queue", "q")}))]
            assert 119 <= took <= 125

    asyncio.run(main())


# -- gangs waiting -----------------------------------------------------------------------------


def _filter(engine: Engine, state: ClusterState, uid: str) -> None:
    engine.filter(state, state.pods[uid], ["n1"], fit=True)


def _waiting_scene() -> tuple[ClusterState, Engine, list[float]]:
    """On one 4-cpu node: `big` (two 4-cpu members) refused for want of capacity, made 300 s
    ago; `lost`, in a queue that does not exist, 60 s ago; `ghost`'s pods name a PodGroup that
    does not exist (first seen at the ledger's time 1000, asked again at 1045); `later` (made
    30 s ago) waits in the fair order and was never asked about; `short`, in queue `small`, is
    refused for its queue's capability."""
    state = cluster([make_node("n1").cpu("4")])
    state.upsert_queue(make_queue("small").capability(cpu="1").model())
    groups = [("big", 2, "4", 300, ""), ("lost", 1, "1", 60, "gone"), ("later", 1, "8", 30, "")]
    groups.append(("short", 1, "2", 10, "small"))
    for name, size, cpu, age, queue in groups:
        group = make_group(name).min_member(size).set("metadata.creationTimestamp", made(age))
        state.upsert_pod_group((group.queue(queue) if queue else group).model())
        for index in range(size):
            state.upsert_pod(
                make_pod(f"{name}-{index}").uid(f"{name}-{index}").cpu(cpu).group(name).model()
            )
    state.upsert_pod(make_pod("ghost-0").uid("ghost-0").cpu("1").group("ghost").model())
    engine = Engine(build_policy(ENGINE_POLICY, REGISTRY))
    assert engine.gangs is not None
    ticks = [1000.0]
    engine.gangs.clock = lambda: ticks[0]
    for uid in ("big-0", "lost-0", "ghost-0", "short-0"):
        _filter(engine, state, uid)
    ticks[0] = 1045.0
    _filter(engine, state, "ghost-0")
    return state, engine, ticks


@pytest.mark.parametrize(
    ("queue", "cause", "count", "oldest"),
    [
        ("default", "NotEnoughResources", 1, 300.0),
        ("gone", "NoQueue", 1, 60.0),
        ("default", "NoPodGroup", 1, 45.0),  # no PodGroup: since the ledger first saw it wait
        ("default", "NotAskedYet", 1, 30.0),
        ("small", "QueueCapability", 1, 10.0),
    ],
)
def test_waiting_gangs_by_queue_and_cause(
    queue: str, cause: str, count: int, oldest: float
) -> None:
    state, engine, _ = _waiting_scene()
    assert engine.gangs is not None
    figures = QueueFigures({}, {}, {}, gang_waits(state, engine.gangs, NOW))
    gauges = QueueGauges(lambda: figures)
    assert value(gauges, "lahar_gangs_waiting", queue=queue, cause=cause) == count
    assert value(gauges, "lahar_gangs_waiting_oldest_seconds", queue=queue, cause=cause) == oldest


def test_waiting_gauges_count_each_gang_once_and_keep_the_oldest() -> None:
    state, engine, _ = _waiting_scene()
    assert engine.gangs is not None
    waits = gang_waits(state, engine.gangs, NOW)
    assert len(waits) == 5  # big, lost, ghost, later, short: once each
    more = gang_waits(state, engine.gangs, NOW + 100)  # the same gangs, 100 s on
    twice = QueueGauges(lambda: QueueFigures({}, {}, {}, [*waits, *more]))
    labels = {"queue": "default", "cause": "NotEnoughResources"}
    assert value(twice, "lahar_gangs_waiting", **labels) == 2
    assert value(twice, "lahar_gangs_waiting_oldest_seconds", **labels) == 400.0


def test_no_gang_waiting_means_no_waiting_series() -> None:
    gauges = QueueGauges(lambda: QueueFigures({}, {}, {}))
    names = {name for name, _ in samples(gauges)}
    assert not {"lahar_gangs_waiting", "lahar_gangs_waiting_oldest_seconds"} & names


def test_an_admitted_gang_is_not_waiting() -> None:
    state = cluster([make_node("n1").cpu("4")])
    state.upsert_pod_group(make_group("g").set("metadata.creationTimestamp", made(5)).model())
    state.upsert_pod(make_pod("g-0").uid("g-0").cpu("1").group("g").model())
    engine = Engine(build_policy(ENGINE_POLICY, REGISTRY))
    assert engine.gangs is not None
    _filter(engine, state, "g-0")
    assert list(engine.gangs.admitted()) == ["default/g"]
    assert gang_waits(state, engine.gangs, NOW) == []


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
    async def __call__(self, namespace: str, name: str, uid: str, dry_run: bool) -> bool:
        return True


def _preemption(state: ClusterState, victims: Iterable[tuple[str, str]]) -> Preemption:
    """For gang `urgent` (queue `ml`), the whole gangs `victims` (name, queue) running on n0."""
    units = []
    for name, queue in victims:
        running(state, name, ["n0", "n0"], cpu="1", queue=queue)
        pods: list[Pod] = [p for p in state.pods.values() if p.metadata.name.startswith(f"{name}-")]
        units.append(Unit(f"default/{name}", queue, 0, tuple((p, "n0") for p in pods), True))
    return Preemption(view_gang(state, "default/urgent"), units)


@pytest.mark.parametrize(
    ("victims", "counted"),
    [
        pytest.param([("low", "ml")], {"preempt": 2, "reclaim": 0}, id="same queue: preempt"),
        pytest.param([("other", "batch")], {"preempt": 0, "reclaim": 2}, id="other queue: reclaim"),
        pytest.param(
            [("low", "ml"), ("other", "batch")], {"preempt": 2, "reclaim": 2}, id="both at once"
        ),
    ],
)
@pytest.mark.parametrize("how", ["evicted by Lahar", "proposed to the scheduler"])
def test_preemption_victims_by_reason(
    victims: list[tuple[str, str]], counted: dict[str, int], how: str
) -> None:
    state = cluster([make_node("n0").cpu("8")])
    for queue in ("ml", "batch"):
        state.upsert_queue(make_queue(queue).model())
    state.upsert_pod_group(make_group("urgent").queue("ml").model())
    state.upsert_pod(make_pod("urgent-0").uid("urgent-0").cpu("8").group("urgent").model())
    engine = Engine(build_policy(ENGINE_POLICY, REGISTRY))
    assert engine.gangs is not None
    metrics = ExtenderMetrics(dict)

    async def main() -> None:
        preemptor = Preemptor(
            state,
            engine.gangs,  # type: ignore[arg-type]
            PreemptionSettings(0.01, Rules()),
            _Evictions(),
            lambda key, event: None,
            ready=asyncio.Event(),
        )
        counter = metrics.preemption_victims
        preemptor.on_evicted = lambda reason, pods: counter.labels(reason).inc(pods)
        preemption = _preemption(state, victims)
        if how == "evicted by Lahar":
            assert await preemptor.carry_out(preemption) is True
        else:
            preemptor.proposed(preemption)

    asyncio.run(main())
    for reason, pods in counted.items():
        total = value(metrics.registry, "lahar_pod_preemption_victims_total", reason=reason)
        assert total == pods


# -- ProvisioningRequests by state -------------------------------------------------------------


def _request(name: str, *conditions: tuple[str, str]) -> ProvisioningRequest:
    status = [{"type": kind, "status": status} for kind, status in conditions]
    return ProvisioningRequest.model_validate(
        {"metadata": {"name": name, "namespace": "ml"}, "status": {"conditions": status}}
    )


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
    requests: list[ProvisioningRequest], expected: dict[str, int]
) -> None:
    book = ScaleUps()
    for request in requests:  # (as the provisioner's pass notes them, `gangs.provisioning`)
        meta = request.metadata
        book.seen(f"ml/{meta.name}", Asked(meta.namespace, meta.name, 1, request.phase, 0.0), 0.0)
    gauge = RequestStates()
    gauge.read = lambda: request_states(book)
    states = ("Pending", "Accepted", "Provisioned", "Failed", "BookingExpired", "CapacityRevoked")
    for state in states:
        assert value(gauge, "lahar_provisioning_requests", state=state) == expected.get(state, 0)


def test_provisioning_requests_read_nothing_until_the_provisioner_says() -> None:
    metrics = ExtenderMetrics(dict)
    assert value(metrics.registry, "lahar_provisioning_requests", state="Pending") == 0
