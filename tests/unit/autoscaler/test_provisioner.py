"""The Cluster Autoscaler stand-in's pure parts, without a cluster: what a pod asks for, whether
it fits a node (resources, pod count, nodeSelector, required node affinity, taints against
tolerations), first-fit on existing nodes, how many template nodes a request needs (all or
nothing), and which pods it scales up for."""

from __future__ import annotations

from typing import Any

import pytest

from extender.devcluster.nodes import fake_node
from tests.autoscaler.provisioner import (
    Capacity,
    first_fit,
    fits,
    nodes_needed,
    pending,
    pod_requests,
)

KEY = "lahar.io/e2e"


def spec(cpu: str = "1", memory: str = "1Gi", **fields: Any) -> dict[str, Any]:
    """A pod spec with one container asking for `cpu` and `memory`, and `fields` besides."""
    requests = {"cpu": cpu, "memory": memory}
    return {"containers": [{"name": "c", "resources": {"requests": requests}}], **fields}


def node(
    cpu: str = "4",
    *,
    memory: str = "8Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    bound: tuple[dict[str, Any], ...] = (),
) -> Capacity:
    made = fake_node("n1", cpu=cpu, memory=memory, pods=pods, labels=labels, taints=taints)
    return Capacity.of(made, bound)


def taint(effect: str = "NoSchedule", value: str = "ns") -> dict[str, str]:
    return {"key": KEY, "value": value, "effect": effect}


def needs(operator: str, *values: str, key: str = "zone") -> dict[str, Any]:
    expression = {"key": key, "operator": operator, "values": list(values)}
    term = {"matchExpressions": [expression]}
    required = {"nodeSelectorTerms": [term]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


GI = 2**30


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (spec("1", "1Gi"), {"cpu": 1000, "memory": GI, "pods": 1}),
        (spec("250m", "512Mi"), {"cpu": 250, "memory": GI // 2, "pods": 1}),
        ({"containers": [{"name": "c"}]}, {"pods": 1}),
        (
            {"containers": [{"resources": {"requests": {"cpu": "1"}}}] * 2},
            {"cpu": 2000, "pods": 1},
        ),
        # An init container asking for more than the containers sets the request.
        (
            spec("1", initContainers=[{"resources": {"requests": {"cpu": "3"}}}]),
            {"cpu": 3000, "memory": GI, "pods": 1},
        ),
        # A sidecar runs beside the containers; a later init container runs beside it.
        (
            spec(
                "1",
                initContainers=[
                    {"restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                    {"resources": {"requests": {"cpu": "2"}}},
                ],
            ),
            {"cpu": 3000, "memory": GI, "pods": 1},
        ),
        # An init container before the sidecar does not run beside it.
        (
            spec(
                "1",
                initContainers=[
                    {"resources": {"requests": {"cpu": "5"}}},
                    {"restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                ],
            ),
            {"cpu": 5000, "memory": GI, "pods": 1},
        ),
        (spec("1", overhead={"cpu": "100m"}), {"cpu": 1100, "memory": GI, "pods": 1}),
        (spec("1", resources={"requests": {"cpu": "4"}}), {"cpu": 4000, "memory": GI, "pods": 1}),
        (
            {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "2"}}}]},
            {"nvidia.com/gpu": 2, "pods": 1},
        ),
    ],
)
def test_a_pod_asks_for_what_the_scheduler_counts(
    pod: dict[str, Any], expected: dict[str, int]
) -> None:
    assert pod_requests(pod) == expected


SELECTED = spec(nodeSelector={KEY: "ns"}, tolerations=[{"key": KEY, "value": "ns"}])


@pytest.mark.parametrize(
    ("pod", "target", "expected"),
    [
        (spec("4", "8Gi"), node(), True),
        (spec("4100m"), node(), False),
        (spec("1", "9Gi"), node(), False),
        (spec("2"), node(bound=(spec("2"),)), True),
        (spec("2"), node(bound=(spec("2", "1Gi"), spec("100m"))), False),
        (spec("100m", "1Mi"), node(pods=1, bound=(spec("0", "0"),)), False),
        (spec("100m", "1Mi"), node(pods=2, bound=(spec("0", "0"),)), True),
        (
            {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
            node(),
            False,
        ),
        # nodeSelector.
        (spec(nodeSelector={KEY: "ns"}), node(), False),
        (spec(nodeSelector={KEY: "ns"}), node(labels={KEY: "other"}), False),
        (spec(nodeSelector={KEY: "ns"}), node(labels={KEY: "ns"}), True),
        # Taints: NoSchedule and NoExecute keep pods off unless tolerated.
        (spec(), node(taints=[taint()]), False),
        (spec(), node(taints=[taint("NoExecute")]), False),
        (spec(), node(taints=[taint("PreferNoSchedule")]), True),
        (spec(tolerations=[{"key": KEY, "value": "ns"}]), node(taints=[taint()]), True),
        (spec(tolerations=[{"key": KEY, "value": "xx"}]), node(taints=[taint()]), False),
        (
            spec(tolerations=[{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}]),
            node(taints=[taint()]),
            True,
        ),
        (
            spec(tolerations=[{"key": KEY, "operator": "Exists", "effect": "NoExecute"}]),
            node(taints=[taint()]),
            False,
        ),
        (spec(tolerations=[{"operator": "Exists"}]), node(taints=[taint("NoExecute")]), True),
        (SELECTED, node(labels={KEY: "ns"}, taints=[taint()]), True),
        (SELECTED, node(labels={KEY: "ns"}, taints=[taint(), taint(value="b")]), False),
        # Required node affinity.
        (spec(affinity=needs("In", "a", "b")), node(labels={"zone": "b"}), True),
        (spec(affinity=needs("In", "a")), node(labels={"zone": "b"}), False),
        (spec(affinity=needs("In", "a")), node(), False),
        (spec(affinity=needs("NotIn", "a")), node(), True),
        (spec(affinity=needs("NotIn", "a")), node(labels={"zone": "a"}), False),
        (spec(affinity=needs("Exists")), node(labels={"zone": "a"}), True),
        (spec(affinity=needs("DoesNotExist")), node(labels={"zone": "a"}), False),
        (spec(affinity=needs("Gt", "3")), node(labels={"zone": "4"}), True),
        (spec(affinity=needs("Lt", "3")), node(labels={"zone": "4"}), False),
        (
            spec(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {
                                            "key": "metadata.name",
                                            "operator": "In",
                                            "values": ["n1"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                }
            ),
            node(),
            True,
        ),
    ],
)
def test_a_pod_fits_a_node(pod: dict[str, Any], target: Capacity, expected: bool) -> None:
    assert fits(pod, target) is expected


def test_first_fit_takes_room_and_returns_what_fits_nowhere() -> None:
    nodes = [node(cpu="2"), node(cpu="3")]
    left = first_fit([spec("2"), spec("2"), spec("2"), spec("1")], nodes)
    assert left == [spec("2")]
    assert [n.free["cpu"] for n in nodes] == [0, 0]


def template(cpu: str = "2", **labels: str) -> Any:
    def make(index: int) -> Capacity:
        return Capacity.of(fake_node(f"t-{index}", cpu=cpu, memory="8Gi", labels=labels))

    return make


@pytest.mark.parametrize(
    ("pods", "make", "room", "expected"),
    [
        ([], template(), 0, 0),
        ([spec("1")] * 4, template("2"), 10, 2),
        ([spec("1")] * 5, template("2"), 10, 3),
        ([spec("3")] * 2, template("4"), 2, 2),
        # All or nothing: one node short, no node at all.
        ([spec("1")] * 5, template("2"), 2, None),
        ([spec("1")] * 4, template("2"), 2, 2),
        # A pod no empty template node takes.
        ([spec("1"), spec("3")], template("2"), 10, None),
        ([spec(nodeSelector={KEY: "ns"})], template("2"), 10, None),
        ([spec(nodeSelector={KEY: "ns"})], template("2", **{KEY: "ns"}), 10, 1),
        # First fit, in order: 3 then 1 share a node, 2 and 2 the next.
        ([spec("3"), spec("2"), spec("1"), spec("2")], template("4"), 10, 2),
        ([spec("2"), spec("3"), spec("2"), spec("1")], template("4"), 10, 2),
        ([spec("2"), spec("3"), spec("3")], template("4"), 10, 3),
    ],
)
def test_the_nodes_a_request_needs(
    pods: list[dict[str, Any]], make: Any, room: int, expected: int | None
) -> None:
    assert nodes_needed(pods, make, room) == expected


def pod(**changes: Any) -> dict[str, Any]:
    """A pod the scheduler found no node for; `changes` (dotted paths) set or drop (None) fields."""
    made: dict[str, Any] = {
        "metadata": {"name": "p", "annotations": {}},
        "spec": spec(),
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = made
        for part in parents:
            target = target[part]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return made


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (pod(), True),
        (pod(spec__nodeName="n1"), False),
        (pod(spec__schedulingGates=[{"name": "lahar.io/gang"}]), False),
        (pod(metadata__deletionTimestamp="2026-01-01T00:00:00Z"), False),
        (pod(status__conditions=[]), False),
        (pod(status__conditions=[{"type": "PodScheduled", "status": "False"}]), False),
        (
            pod(
                status__conditions=[
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}
                ]
            ),
            False,
        ),
        (
            pod(metadata__annotations={"autoscaling.x-k8s.io/consume-provisioning-request": "r"}),
            False,
        ),
        (
            pod(
                metadata__annotations={
                    "cluster-autoscaler.kubernetes.io/consume-provisioning-request": "r"
                }
            ),
            False,
        ),
        (pod(spec__priority=-11), False),
        (pod(spec__priority=-10), True),
        (pod(status__phase="Failed"), False),
    ],
)
def test_the_pods_it_scales_up_for(candidate: dict[str, Any], expected: bool) -> None:
    assert pending(candidate) is expected
