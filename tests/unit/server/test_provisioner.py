"""The provisioner carries out the scale-up plan: templates before the request that names them,
no request on a cluster that does not serve the kind (the gang says why), the gang of a
Provisioned request admitted onto the new capacity."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from extender.api.provisioning import CONSUME_ANNOTATION, ProvisioningRequest
from extender.api.scheduling import GANG_GATE
from extender.cache.state import ClusterState
from extender.framework.policy import build_policy
from extender.framework.session import Engine
from extender.gangs.provisioning import request_body
from extender.gangs.scale_up import SCALE_UP_ANNOTATION, Asked
from extender.plugins import REGISTRY
from extender.server.provisioner import NOT_SERVED, Provisioner
from tests.builders import cluster, make_group, make_node, make_pod, make_queue

POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}]}],
}
KEY = "default/big"


class FakeApi:
    """Records the writes; answers a member read with the pod's manifest."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.annotated: dict[str, str | None] = {}

    async def create(self, body: Mapping[str, Any]) -> bool:
        self.calls.append(("create", f"{body['kind']} {body['metadata']['name']}"))
        return True

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, uid: str
    ) -> bool:
        self.calls.append(("delete", f"{kind} {name}"))
        return True

    async def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return make_pod(name).cpu("4").build()

    async def annotate(self, namespace: str, name: str, values: Mapping[str, str | None]) -> None:
        self.annotated[name] = values[CONSUME_ANNOTATION]


def waiting(nodes: int = 2) -> tuple[ClusterState, Engine]:
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(nodes)])
    state.upsert_queue(make_queue("q").annotate(SCALE_UP_ANNOTATION, "provisioningRequest").model())
    group = make_group("big").min_member(4).queue("q").model()
    state.upsert_pod_group(
        group.model_copy(update={"metadata": group.metadata.model_copy(update={"uid": "g1"})})
    )
    for index in range(4):
        pod = make_pod(f"big-{index}").uid(f"big-{index}").cpu("4").group("big")
        state.upsert_pod(pod.scheduler("lahar").gated(GANG_GATE).model())
    engine = Engine(build_policy(POLICY, REGISTRY), schedulers=["lahar"])
    assert engine.gangs is not None
    engine.want_nodes(state)
    return state, engine


def test_templates_are_made_before_the_request_that_names_them() -> None:
    state, engine = waiting()
    api = FakeApi()
    changed: list[str] = []
    provisioner = Provisioner(state, engine, api, served=lambda: True, changed=changed.append)
    asyncio.run(provisioner.step())
    assert api.calls == [
        ("create", "PodTemplate big-1-p0"),
        ("create", "ProvisioningRequest big-1"),
    ]
    assert changed == [KEY]


def test_a_cluster_without_the_kind_gets_no_request_and_the_gang_says_why() -> None:
    state, engine = waiting()
    api = FakeApi()
    asyncio.run(Provisioner(state, engine, api, served=lambda: False).step())
    assert api.calls == []
    assert engine.gangs is not None
    said = engine.gangs.scale_ups.describe(KEY, 0.0)
    assert said == f"waiting for nodes: no ProvisioningRequest was made: {NOT_SERVED}"


def test_the_gang_of_a_provisioned_request_is_admitted_onto_the_new_nodes() -> None:
    state, engine = waiting()
    group = state.pod_groups[KEY]
    body: dict[str, Any] = request_body(group, "big-1", 1, [("big-1-p0", 4)])
    body["metadata"]["uid"] = "r1"
    body["status"] = {"conditions": [{"type": "Provisioned", "status": "True"}]}
    state.upsert_provisioning_request(ProvisioningRequest.model_validate(body))
    for index in (2, 3):  # the nodes the autoscaler added
        state.upsert_node(make_node(f"n{index}").cpu("4").model())
    api = FakeApi()
    told: list[str] = []
    provisioner = Provisioner(
        state, engine, api, served=lambda: True, provisioned=lambda: told.append("waker")
    )
    asyncio.run(provisioner.step())
    assert told == ["waker"]  # (its pass admits the gang, before the fair order's)
    assert engine.admit_provisioned(state) == [KEY]
    assert engine.gangs is not None and engine.gangs.admission(KEY) is not None
    assert api.annotated == dict.fromkeys((f"big-{i}" for i in range(4)), "big-1")
    assert api.calls == []  # (nothing made, nothing deleted)


def test_the_gang_provisioned_first_has_the_first_nodes() -> None:
    """Two gangs Provisioned, room come for one: the one provisioned first takes it."""
    state, engine = waiting(nodes=0)
    assert engine.gangs is not None
    book = engine.gangs.scale_ups
    for name, since in (("late", 5.0), ("big", 1.0)):
        group = make_group(name).min_member(4).queue("q").model()
        state.upsert_pod_group(group)
        for index in range(4):
            pod = make_pod(f"{name}-{index}").uid(f"{name}-{index}").cpu("4").group(name)
            state.upsert_pod(pod.scheduler("lahar").gated(GANG_GATE).model())
        key = f"default/{name}"
        book.seen(key, Asked("default", f"{name}-1", 1, "Provisioned", since), now=since)
    for index in range(4):
        state.upsert_node(make_node(f"n{index}").cpu("4").model())
    assert engine.admit_provisioned(state) == [KEY]
    assert engine.gangs.admission("default/late") is None


def test_a_request_of_that_name_made_for_someone_else_is_said() -> None:
    state, engine = waiting()

    class Taken(FakeApi):
        async def create(self, body: Mapping[str, Any]) -> bool:
            await super().create(body)
            return body["kind"] != "ProvisioningRequest"  # (one of that name exists)

    asyncio.run(Provisioner(state, engine, Taken(), served=lambda: True).step())
    assert engine.gangs is not None
    said = engine.gangs.scale_ups.describe(KEY, 0.0)
    assert said == (
        "waiting for nodes: no ProvisioningRequest was made: a ProvisioningRequest named big-1 "
        "exists and is not this gang's"
    )


def test_with_every_queue_asking_nothing_a_pass_does_nothing() -> None:
    """As shipped (mode `none`): the pass reads no gang and no pod."""
    state, engine = waiting()
    state.upsert_queue(make_queue("q").model())  # (no annotation: the default, none)
    api = FakeApi()
    asyncio.run(Provisioner(state, engine, api, served=lambda: True).step())
    assert api.calls == [] and api.annotated == {}
    assert engine.gangs is not None and engine.gangs.scale_ups.known() == []
