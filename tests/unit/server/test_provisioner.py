"""The provisioner carries out the scale-up plan: templates before the request that names them,
no request on a cluster that does not serve the kind (the gang says why), the gang of a
Provisioned request admitted onto the new capacity."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from extender.api.provisioning import CONSUME_ANNOTATION, ProvisioningRequest
from extender.api.scale_up import SCALE_UP_ANNOTATION
from extender.api.scheduling import GANG_GATE
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, request_body
from extender.framework.policy import build_policy
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
    assert engine.gang_rules
    engine.want_nodes(state)
    return state, engine


def request(state: ClusterState, name: str, phase: str) -> None:
    """The first attempt's ProvisioningRequest for gang `name`, its condition `phase` True, as
    Lahar's watch shows it."""
    group = state.pod_groups[f"default/{name}"]
    body: dict[str, Any] = request_body(group, f"{name}-1", 1, [(f"{name}-1-p0", 4)])
    body["metadata"]["uid"] = f"r-{name}"
    body["status"] = {"conditions": [{"type": phase, "status": "True"}]}
    state.upsert_provisioning_request(ProvisioningRequest.model_validate(body))


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
    said = engine.scale_up_said(KEY, 0.0)
    assert said == f"waiting for nodes: no ProvisioningRequest was made: {NOT_SERVED}"


def test_the_gang_of_a_provisioned_request_is_admitted_onto_the_new_nodes() -> None:
    state, engine = waiting()
    request(state, "big", "Provisioned")
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
    assert engine.admission(KEY) is not None
    assert api.annotated == dict.fromkeys((f"big-{i}" for i in range(4)), "big-1")
    assert api.calls == []  # (nothing made, nothing deleted)


def test_the_gang_provisioned_first_has_the_first_nodes() -> None:
    """Two gangs Provisioned, room come for one: the one provisioned first takes it, though the
    other's request was seen first (Accepted, then Provisioned later)."""
    state, engine = waiting(nodes=0)
    state.upsert_pod_group(make_group("late").min_member(4).queue("q").model())
    for index in range(4):
        pod = make_pod(f"late-{index}").uid(f"late-{index}").cpu("4").group("late")
        state.upsert_pod(pod.scheduler("lahar").gated(GANG_GATE).model())
    assert sorted(engine.want_nodes(state)) == [KEY, "default/late"]
    for name, phase, now in (("late", "Accepted", 1.0), ("big", "Provisioned", 2.0)):
        request(state, name, phase)
        engine.provisioning_plan(state, now)  # (as the provisioner's pass reads them)
    request(state, "late", "Provisioned")
    engine.provisioning_plan(state, 5.0)
    assert sorted(engine.asking()) == [KEY, "default/late"]
    assert engine.scale_up_said("default/late", 5.0) == (
        "waiting for nodes: ProvisioningRequest default/late-1 Provisioned for 0 s"
    )
    for index in range(4):
        state.upsert_node(make_node(f"n{index}").cpu("4").model())
    assert engine.admit_provisioned(state) == [KEY]
    assert engine.admission("default/late") is None


def test_a_request_of_that_name_made_for_someone_else_is_said() -> None:
    state, engine = waiting()

    class Taken(FakeApi):
        async def create(self, body: Mapping[str, Any]) -> bool:
            await super().create(body)
            return body["kind"] != "ProvisioningRequest"  # (one of that name exists)

    asyncio.run(Provisioner(state, engine, Taken(), served=lambda: True).step())
    said = engine.scale_up_said(KEY, 0.0)
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
    assert engine.asking() == []
