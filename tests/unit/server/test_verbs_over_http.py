"""The running app answers kube-scheduler-shaped calls for every verb, in both node variants, and
refuses malformed bodies with HTTP 400 naming the field. The state is filled by the test (no
cluster); bind goes to a recording binder (the real binding is tested in tests/e2e)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from extender.actions.bind import BindError
from extender.cache.state import ClusterState
from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.server.app import make_app
from tests.builders import cluster, make_group, make_node, make_pod, make_queue

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
PREEMPTING = POLICY.with_name("preemption.yaml")  # the shipped policy evicts nothing
Scenario = Callable[[TestClient[Any, Any], ClusterState, list[tuple[str, ...]]], Awaitable[None]]


def run(scenario: Scenario, refuse: str = "", policy: Path = POLICY) -> None:
    state = cluster(
        [make_node("empty").cpu("8"), make_node("busy").cpu("8"), make_node("tiny").cpu("1")],
        [make_pod("a").cpu("6").on("busy").uid("a"), make_pod("new").cpu("1").uid("new")],
    )
    bound: list[tuple[str, ...]] = []

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        if refuse:
            raise BindError(refuse)
        bound.append((namespace, name, uid, node))

    async def main() -> None:
        app = make_app(load_policy(policy, REGISTRY), state=state, binder=binder)
        async with TestClient(TestServer(app)) as client:
            await scenario(client, state, bound)

    asyncio.run(main())


def args(pod: dict[str, Any], names: list[str], *, objects: bool = False) -> dict[str, Any]:
    if objects:
        items = [make_node(n).build() for n in names]
        return {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}
    return {"Pod": pod, "Nodes": None, "NodeNames": names}


def test_filter_leaves_resource_fit_to_the_scheduler_and_echoes_the_candidates() -> None:
    """kube-scheduler's NodeResourcesFit has kept the nodes the pod fits on: without a gang or a
    reservation Lahar has no opinion, and the reply is the request's own list."""

    async def scenario(client: TestClient[Any, Any], *_: object) -> None:
        names = ["empty", "busy", "tiny", "gone"]
        response = await client.post("/filter", json=args(make_pod("p").cpu("4").build(), names))
        assert response.status == 200
        assert await response.json() == {
            "Nodes": None,
            "NodeNames": names,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": "",
        }

    run(scenario)


def _gang(state: ClusterState, name: str, size: int, cpu: str) -> list[dict[str, Any]]:
    state.upsert_pod_group(make_group(name).min_member(size).model())
    pods = [make_pod(f"{name}-{i}").uid(f"{name}-{i}").cpu(cpu).group(name) for i in range(size)]
    for pod in pods:
        state.upsert_pod(pod.model())
    return [pod.build() for pod in pods]


def test_filter_keeps_other_pods_off_what_an_admitted_gang_reserves() -> None:
    async def scenario(client: TestClient[Any, Any], state: ClusterState, *_: object) -> None:
        member = _gang(state, "g", 2, "4")[0]
        names = ["empty", "busy", "tiny"]
        admitted = await (await client.post("/filter", json=args(member, names))).json()
        assert admitted["FailedNodes"] == admitted["FailedAndUnresolvableNodes"] == {}
        plain = make_pod("p").cpu("1").build()
        reply = await (await client.post("/filter", json=args(plain, names))).json()
        assert reply["NodeNames"] == ["busy", "tiny"]
        assert reply["FailedNodes"] == {
            "empty": "Insufficient cpu: requested 1, free 8 of which 8 is reserved for admitted "
            "gangs"
        }

    run(scenario)


@pytest.mark.parametrize("objects", [False, True])
def test_a_refused_gang_member_is_told_why_once_and_passes_nowhere(objects: bool) -> None:
    async def scenario(client: TestClient[Any, Any], state: ClusterState, *_: object) -> None:
        member = _gang(state, "big", 3, "6")[0]
        names = ["empty", "busy", "tiny"]
        reply = await client.post("/filter", json=args(member, names, objects=objects))
        body = await reply.json()
        why = "gang default/big: 2 of 3 members cannot be placed: Insufficient cpu"
        assert body["FailedNodes"] == {}
        if objects:  # the Nodes variant names every node
            assert body["Nodes"]["items"] == []
            assert body["FailedAndUnresolvableNodes"] == dict.fromkeys(names, why)
        else:
            assert body["NodeNames"] == []
            assert body["FailedAndUnresolvableNodes"] == {"empty": why}

    run(scenario)


def test_filter_with_node_objects_echoes_the_passing_objects() -> None:
    async def scenario(client: TestClient[Any, Any], *_: object) -> None:
        body = args(make_pod("p").cpu("2").build(), ["empty", "busy", "tiny"], objects=True)
        reply = await (await client.post("/filter", json=body)).json()
        assert reply["NodeNames"] is None
        assert reply["Nodes"]["items"] == body["Nodes"]["items"]
        assert reply["FailedNodes"] == reply["FailedAndUnresolvableNodes"] == {}

    run(scenario)


@pytest.mark.parametrize("objects", [False, True])
def test_prioritize_binpacks(objects: bool) -> None:
    async def scenario(client: TestClient[Any, Any], *_: object) -> None:
        body = args(make_pod("p").cpu("1").build(), ["empty", "busy"], objects=objects)
        reply = await (await client.post("/prioritize", json=body)).json()
        assert reply == [{"Host": "empty", "Score": 1}, {"Host": "busy", "Score": 9}]

    run(scenario)


@pytest.mark.parametrize(
    ("policy", "victims"),
    [
        pytest.param(
            PREEMPTING,
            {"busy": {"Pods": [{"UID": "a"}], "NumPDBViolations": 0}},
            id="policy/preemption.yaml",
        ),
        pytest.param(POLICY, {}, id="the shipped policy evicts nothing"),
    ],
)
def test_preempt_returns_the_candidates_with_victims_in_meta_form(
    policy: Path, victims: dict[str, Any]
) -> None:
    async def scenario(client: TestClient[Any, Any], *_: object) -> None:
        body = {
            "Pod": make_pod("p").build(),
            "NodeNameToVictims": {
                "busy": {"Pods": [make_pod("a").uid("a").build()], "NumPDBViolations": 0},
                "empty": {"Pods": [], "NumPDBViolations": 0},
            },
        }
        reply = await (await client.post("/preempt", json=body)).json()
        assert reply == {"NodeNameToMetaVictims": victims}

    run(scenario, policy=policy)


def test_bind_counts_the_pod_at_once() -> None:
    async def scenario(
        client: TestClient[Any, Any], state: ClusterState, bound: list[tuple[str, ...]]
    ) -> None:
        body = {"PodName": "new", "PodNamespace": "default", "PodUID": "new", "Node": "empty"}
        reply = await (await client.post("/bind", json=body)).json()
        assert reply == {"Error": ""}
        assert bound == [("default", "new", "new", "empty")]
        assert state.snapshot().nodes["empty"].requested["cpu"] == 1000
        metrics = await (await client.get("/metrics")).text()
        assert 'lahar_binds_total{result="bound"} 1.0' in metrics

    run(scenario)


def test_a_refused_bind_is_returned_and_forgotten() -> None:
    async def scenario(client: TestClient[Any, Any], state: ClusterState, *_: object) -> None:
        body = {"PodName": "new", "PodNamespace": "default", "PodUID": "new", "Node": "empty"}
        reply = await (await client.post("/bind", json=body)).json()
        assert reply == {"Error": "pod default/new is being deleted"}
        assert state.snapshot().nodes["empty"].requested["cpu"] == 0

    run(scenario, refuse="pod default/new is being deleted")


@pytest.mark.parametrize(
    ("verb", "body", "message"),
    [
        ("/filter", b"{not json", "/filter: invalid ExtenderArgs: body: Invalid JSON"),
        ("/filter", b'{"NodeNames": []}', "/filter: invalid ExtenderArgs: Pod: Field required"),
        (
            "/prioritize",
            json.dumps(args(make_pod("p").cpu("much").build(), ["empty"])).encode(),
            "Pod.spec.containers.0.resources.requests: cpu: invalid quantity 'much'",
        ),
        ("/bind", b'{"PodName": "p"}', "PodNamespace: Field required"),
        ("/preempt", b"[]", "/preempt: invalid ExtenderPreemptionArgs: body: Input should be"),
    ],
)
def test_malformed_bodies_are_400_naming_the_field(verb: str, body: bytes, message: str) -> None:
    async def scenario(client: TestClient[Any, Any], *_: object) -> None:
        response = await client.post(verb, data=body)
        assert response.status == 400
        text = await response.text()
        assert message in text
        assert "Traceback" not in text
        metrics = await (await client.get("/metrics")).text()
        assert f'lahar_extender_requests_total{{result="bad_request",verb="{verb[1:]}"}} 1.0' in (
            metrics
        )

    run(scenario)


def test_health_readiness_and_metrics() -> None:
    async def scenario(client: TestClient[Any, Any], *_: object) -> None:
        assert (await client.get("/healthz")).status == 200
        assert (await client.get("/readyz")).status == 200
        await client.post("/filter", json=args(make_pod("p").build(), ["empty"]))
        metrics = await (await client.get("/metrics")).text()
        assert 'lahar_cache_objects{kind="nodes"} 3.0' in metrics
        assert 'lahar_cache_objects{kind="pods"} 2.0' in metrics
        assert 'lahar_extender_requests_total{result="ok",verb="filter"} 1.0' in metrics
        assert 'lahar_extender_request_duration_seconds_count{verb="filter"} 1.0' in metrics

    run(scenario)


def test_queue_and_job_share_metrics() -> None:
    async def scenario(client: TestClient[Any, Any], state: ClusterState, *_: object) -> None:
        state.upsert_queue(make_queue("q").weight(3).capability(cpu="12").model())
        state.upsert_pod_group(make_group("g").queue("q").model())
        state.upsert_pod(make_pod("g-0").uid("g-0").cpu("4").group("g").on("empty").model())
        state.upsert_pod_group(make_group("done").model())  # nothing running or waiting
        metrics = await (await client.get("/metrics")).text()
        # 17 cpu in the cluster: g holds 4 of them.
        share = 'lahar_job_share{namespace="default",podgroup="g",queue="q"} 0.235294'
        assert share in metrics
        assert 'podgroup="done"' not in metrics
        assert 'lahar_queue_allocated_milli_cpu{queue="q"} 4000.0' in metrics
        assert 'lahar_queue_capacity_milli_cpu{queue="q"} 12000.0' in metrics
        assert 'lahar_queue_weight{queue="q"} 3.0' in metrics
        assert 'lahar_queue_weight{queue="default"} 1.0' in metrics  # there even if not created

    run(scenario)


def test_debug_explain_says_why_a_gang_waits_and_names_a_bad_query() -> None:
    async def scenario(client: TestClient[Any, Any], state: ClusterState, _: object) -> None:
        state.upsert_pod_group(make_group("big").min_member(2).model())
        for index in range(2):
            state.upsert_pod(
                make_pod(f"big-{index}").cpu("7").group("big").uid(f"b{index}").model()
            )
        await client.post(
            "/filter",
            json=args(make_pod("big-0").cpu("7").group("big").uid("b0").build(), ["empty", "busy"]),
        )
        response = await client.get("/debug/explain", params={"gang": "default/big"})
        assert response.status == 200
        answer = await response.json()
        assert answer["gang"] == "default/big" and answer["state"] == "Waiting"
        assert answer["lines"][0].startswith("gang default/big: 0 of 2 members placed")
        assert any(
            "fits on no node" in line or "fits on 1 node " in line for line in answer["lines"]
        )
        bad = await client.get("/debug/explain", params={"gang": "big"})
        assert bad.status == 400
        assert "expected NAMESPACE/PODGROUP" in await bad.text()

    run(scenario)
