"""A pod's effective request is Kubernetes' (containers, init containers, sidecars, pod-level
requests, overhead, one pod slot); malformed resources are errors naming the field. Pods of one
placement key may run on the same nodes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from extender.api.objects import Pod
from extender.api.resources import Resources
from extender.api.wire import describe_invalid
from extender.cache.snapshot import NodeInfo
from tests.builders import PodBuilder, cluster, make_node, make_pod


def res(**amounts: int) -> Resources:
    return Resources(amounts)


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(make_pod("p"), res(pods=1), id="no requests: one pod slot"),
        pytest.param(
            make_pod("p").cpu("500m").memory("1Gi"),
            res(cpu=500, memory=2**30, pods=1),
            id="one container",
        ),
        pytest.param(
            make_pod("p").cpu("1").container(cpu="2", memory="1Mi"),
            res(cpu=3000, memory=2**20, pods=1),
            id="containers add up",
        ),
        pytest.param(
            make_pod("p").cpu("1").init_container(cpu="4"),
            res(cpu=4000, pods=1),
            id="a bigger init container wins",
        ),
        pytest.param(
            make_pod("p").cpu("3").init_container(cpu="2"),
            res(cpu=3000, pods=1),
            id="a smaller init container does not add",
        ),
        pytest.param(
            make_pod("p").cpu("1").init_container(sidecar=True, cpu="500m"),
            res(cpu=1500, pods=1),
            id="a sidecar adds to the app containers",
        ),
        pytest.param(
            make_pod("p").cpu("1").init_container(sidecar=True, cpu="1").init_container(cpu="3"),
            res(cpu=4000, pods=1),
            id="an init container runs next to the sidecars started before it",
        ),
        pytest.param(
            make_pod("p").cpu("1").overhead(cpu="250m", memory="64Mi"),
            res(cpu=1250, memory=64 * 2**20, pods=1),
            id="overhead is added",
        ),
        pytest.param(
            make_pod("p").cpu("1").memory("1Gi").pod_requests(cpu="3"),
            res(cpu=3000, memory=2**30, pods=1),
            id="pod-level requests replace the resources they name",
        ),
        pytest.param(
            make_pod("p").request("nvidia.com/gpu", "2"),
            Resources({"nvidia.com/gpu": 2, "pods": 1}),
            id="extended resources",
        ),
    ],
)
def test_effective_request(pod: PodBuilder, expected: Resources) -> None:
    assert pod.model().request == expected


@pytest.mark.parametrize(
    ("body", "where", "why"),
    [
        (
            make_pod("p").cpu("lots").build(),
            "spec.containers.0.resources.requests",
            "cpu: invalid quantity 'lots'",
        ),
        (
            make_pod("p").memory("-1Gi").build(),
            "spec.containers.0.resources.requests",
            "memory: must not be negative",
        ),
        (
            make_pod("p").overhead(cpu="x").build(),
            "spec.overhead",
            "cpu: invalid quantity 'x'",
        ),
        ({"spec": {"containers": "nope"}}, "spec.containers", "valid list"),
        ({"spec": {"priority": "high"}}, "spec.priority", "valid integer"),
    ],
)
def test_malformed_pods_name_the_field(body: dict[str, object], where: str, why: str) -> None:
    with pytest.raises(ValidationError) as error:
        Pod.model_validate(body)
    message = describe_invalid(error.value)
    assert message.startswith(f"{where}: ")
    assert why in message


def test_finished_pods() -> None:
    assert make_pod("p").phase("Succeeded").model().finished
    assert make_pod("p").phase("Failed").model().finished
    assert not make_pod("p").phase("Running").model().finished


def test_a_dumped_pod_reads_back_with_the_same_requests() -> None:
    pod = make_pod("p").cpu("1500m").memory("1Gi").model()
    dumped = pod.model_dump(by_alias=True)
    assert dumped["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1500m"
    assert Pod.model_validate(dumped).request == pod.request


@st.composite
def constrained_pods(draw: st.DrawFn, name: str) -> Pod:
    pod = make_pod(name).cpu("1")
    if draw(st.booleans()):
        pod = pod.node_selector("zone", draw(st.sampled_from("ab")))
    if draw(st.booleans()):
        pod = pod.requires("disk", draw(st.sampled_from(("In", "NotIn"))), "ssd")
    for key in draw(st.lists(st.sampled_from(("gpu", "infra")), unique=True, max_size=2)):
        pod = pod.tolerate_any(key) if draw(st.booleans()) else pod.tolerate(key, "yes")
    return pod.model()


@st.composite
def nodes(draw: st.DrawFn) -> list[NodeInfo]:
    made = []
    for index in range(draw(st.integers(1, 6))):
        node = make_node(f"n{index}").cpu("4").label("zone", draw(st.sampled_from("ab")))
        if draw(st.booleans()):
            node = node.label("disk", "ssd")
        for key in draw(st.lists(st.sampled_from(("gpu", "infra")), unique=True, max_size=2)):
            node = node.taint(key, value=draw(st.sampled_from(("yes", "no"))))
        made.append(node)
    return list(cluster(made).view().nodes.values())


@given(constrained_pods("p"), constrained_pods("q"), nodes())
def test_pods_of_one_placement_key_may_run_on_the_same_nodes(
    one: Pod, other: Pod, infos: list[NodeInfo]
) -> None:
    """What is worked out of `may_run_on` for one pod is kept by its placement key for every
    pod of that key: pods of one key may run on exactly the same nodes, whatever their names."""
    if one.placement_key == other.placement_key:
        for info in infos:
            assert one.may_run_on(info.labels, info.taints, info.name) == other.may_run_on(
                info.labels, info.taints, info.name
            )
    renamed = Pod.model_validate({**one.model_dump(by_alias=True), "metadata": {"name": "r"}})
    assert renamed.placement_key == one.placement_key
    assert (one.placement_key == "") == (one.runs_anywhere and not one.spec.tolerations)
