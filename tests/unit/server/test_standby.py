"""A standby extender (leader election on, the Lease held elsewhere) is not ready and answers no
verb: filter refuses every node saying why, preempt offers no victim, bind binds nothing, and
`/debug/explain` answers 503 instead of reading its empty ledger; its `lahar_leader` is 0, the
leader's 1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from extender.framework.policy import load_policy
from extender.kube.leader import LeaseOptions
from extender.plugins import REGISTRY
from extender.server import routes
from extender.server.app import make_app
from extender.shell import SHELL
from tests.builders import cluster, make_node, make_pod

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
LEASE = LeaseOptions("lahar-extender", "lahar-system", "me")
LEADER = 'lahar_leader{{component="extender",lease="{lease}"}} {value}'


def test_a_standby_is_not_ready_and_answers_no_verb(monkeypatch: Any) -> None:
    monkeypatch.setattr(routes, "SYNC_WAIT", 0.05)
    state = cluster([make_node("n1").cpu("4")], [])
    bound: list[str] = []

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        bound.append(name)

    async def main() -> None:
        app = make_app(load_policy(POLICY, REGISTRY), state=state, binder=binder, lease=LEASE)
        async with TestClient(TestServer(app)) as client:
            ready = await client.get("/readyz")
            assert ready.status == 503 and "standby" in await ready.text()
            pod = make_pod("p").cpu("1").build()
            reply = await (
                await client.post("/filter", json={"Pod": pod, "NodeNames": ["n1"]})
            ).json()
            assert "standby" in reply["FailedNodes"]["n1"] and not reply.get("NodeNames")
            preempt = {
                "Pod": pod,
                "NodeNameToVictims": {"n1": {"Pods": [pod], "NumPDBViolations": 0}},
            }
            assert await (await client.post("/preempt", json=preempt)).json() == {
                "NodeNameToMetaVictims": {}
            }
            binding = {"PodName": "p", "PodNamespace": "default", "PodUID": "p", "Node": "n1"}
            reply = await (await client.post("/bind", json=binding)).json()
            assert "standby" in reply["Error"] and bound == []
            explained = await client.get("/debug/explain", params={"gang": "default/g"})
            assert explained.status == 503 and "standby" in await explained.text()
            metrics = await (await client.get("/metrics")).text()
            assert 'lahar_extender_requests_total{result="unavailable",verb="explain"} 1.0' in (
                metrics
            )
            assert LEADER.format(lease="lahar-system/lahar-extender", value="0.0") in metrics

    asyncio.run(main())


def test_an_extender_that_leads_says_so_in_lahar_leader() -> None:
    """With no Lease it leads at once; holding its Lease it leads from when it takes it."""
    state = cluster([make_node("n1").cpu("4")], [])

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        pass

    async def main() -> None:
        policy = load_policy(POLICY, REGISTRY)
        alone = make_app(policy, state=state, binder=binder)
        elected = make_app(policy, state=state, binder=binder, lease=LEASE)
        async with TestClient(TestServer(alone)) as client:
            metrics = await (await client.get("/metrics")).text()
            assert LEADER.format(lease="", value="1.0") in metrics
        async with TestClient(TestServer(elected)) as client:
            elected[SHELL].leading.set()  # (as the elector does on taking the Lease)
            metrics = await (await client.get("/metrics")).text()
            assert LEADER.format(lease="lahar-system/lahar-extender", value="1.0") in metrics

    asyncio.run(main())


def test_an_extender_that_cannot_take_its_lease_says_why_not_standby(monkeypatch: Any) -> None:
    """Not "another replica holds the Lease": the refusal and readiness name the problem."""
    monkeypatch.setattr(routes, "SYNC_WAIT", 0.05)
    state = cluster([make_node("n1").cpu("4")], [])
    problem = "cannot take Lease lahar-system/lahar-extender: namespace lahar-system does not exist"

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        raise AssertionError("a process that does not lead binds nothing")

    async def main() -> None:
        app = make_app(load_policy(POLICY, REGISTRY), state=state, binder=binder, lease=LEASE)
        app[SHELL].lease_problem = problem
        async with TestClient(TestServer(app)) as client:
            ready = await client.get("/readyz")
            assert ready.status == 503
            assert await ready.text() == f"extender is not serving: it {problem}"
            pod = make_pod("p").cpu("1").build()
            reply = await (
                await client.post("/filter", json={"Pod": pod, "NodeNames": ["n1"]})
            ).json()
            assert problem in reply["FailedNodes"]["n1"]
            assert "another replica" not in reply["FailedNodes"]["n1"]

    asyncio.run(main())
