"""A gang pod's filter call, from the HTTP route to the reply, stays within the verb, the
engine's door and the engine (with the cache and the models under them): what listens to the
engine's decisions (the waker, the writers, the metrics) runs after the call, on the loop's next
turn. The call is followed through every Python function it runs (`sys.setprofile`)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.server import routes
from extender.server.app import make_app
from extender.server.keys import ENGINE, METRICS, STATE
from tests.builders import make_group, make_node, make_pod

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
PACKAGE = str(Path(routes.__file__).resolve().parents[1])
# Where a filter call may go: the route and the verb, the door, the engine, and below them.
ALLOWED = (
    "server/routes.py",
    "shell/",  # the process shell's middleware around every route
    "actions/filter.py",
    "framework/engine.py",
    "framework/session.py",
    "framework/table.py",
    "plugins/",  # the policy's hooks the engine calls: job order, node filters and scores
    "gangs/",
    "cache/",
    "api/",
)


def crossed(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], bool, float]:
    """The files of the package a member's filter call runs code in, in the order first
    entered; whether the call admitted its gang; the metric of admitted gangs after a turn."""
    original = routes._filter
    files: dict[str, None] = {}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or not frame.f_code.co_filename.startswith(PACKAGE):
            return
        caller: FrameType | None = frame
        while caller is not None:  # only the filter call's own frames, not other tasks'
            if caller.f_code is original.__code__:
                files[frame.f_code.co_filename[len(PACKAGE) + 1 :]] = None
                return
            caller = caller.f_back

    async def traced(request: Any) -> bytes:
        sys.setprofile(profile)
        try:
            return await original(request)
        finally:
            sys.setprofile(None)

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        return None

    async def main() -> tuple[bool, float]:
        monkeypatch.setattr(routes, "_filter", traced)
        app = make_app(load_policy(POLICY, REGISTRY), binder=binder)  # the shipped wiring
        state = app[STATE]
        for index in range(4):
            state.upsert_node(make_node(f"n{index}").cpu("8").model())
        state.upsert_pod_group(make_group("g").min_member(3).model())
        for index in range(3):
            state.upsert_pod(make_pod(f"g-{index}").uid(f"g-{index}").cpu("1").group("g").model())
        pod = state.pods["g-0"].model_dump(by_alias=True, mode="json")
        body = {"Pod": pod, "NodeNames": ["n0", "n1", "n2", "n3"]}
        async with TestClient(TestServer(app)) as client:
            reply = await client.post("/filter", data=json.dumps(body))
            assert reply.status == 200, await reply.text()
            admitted = app[ENGINE].admission("default/g") is not None
            await asyncio.sleep(0)
            told = app[METRICS].gangs_admitted._value.get()
        return admitted, told

    admitted, told = asyncio.run(main())
    return list(files), admitted, told


def test_a_filter_call_that_admits_a_gang_stays_within_the_verb_the_door_and_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files, admitted, told = crossed(monkeypatch)
    assert admitted  # the call admitted the gang: the walk of the fair order ran in it
    assert "framework/engine.py" in files and "gangs/ledger.py" in files
    assert [f for f in files if not f.startswith(ALLOWED)] == []
    assert told == 1.0  # the metrics heard of the admission, after the call
