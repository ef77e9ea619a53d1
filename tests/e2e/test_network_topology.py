"""Network-topology-aware gangs through the real stock kube-scheduler: HyperNodes group the test's
own nodes into two switches under a spine, and a gang whose `networkTopology` is hard lands
inside one switch or waits whole; a soft one spans the switches when no switch holds it.

HyperNodes are cluster-scoped: each test names its own after its namespace.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.batch import PARTITION_KEY
from extender.kube import apply_object, list_objects, read, wait_until
from tests.builders import make_group, make_hyper_node, make_job
from tests.e2e.conftest import TEST_KEY, ClusterObject, NodeFactory, PodFactory
from tests.e2e.gangs import bound, finish, refused_as, wait_bound
from tests.e2e.jobs import example, pods, running, submit


@pytest.fixture(autouse=True)
def ended(api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory) -> Iterator[None]:
    """After each test, its running pods end (while its nodes still exist, so they finish at
    once): the gangs it leaves behind must not count for the default queue in the tests after
    it."""
    yield
    running_pods = [
        p["metadata"]["name"]
        for p in list_objects(api, "v1", "Pod", namespace=namespace)
        if p["status"].get("phase") == "Running"
    ]
    finish(api, namespace, running_pods)
    wait_until(
        lambda: (
            not any(
                p["status"].get("phase") == "Running"
                for p in list_objects(api, "v1", "Pod", namespace=namespace)
            )
        ),
        timeout=60,
        what="the test's pods ended",
    )


def switches(
    namespace: str, nodes: list[str], cluster_object: ClusterObject, per_switch: int = 4
) -> dict[str, set[str]]:
    """HyperNodes: switches (tier 1) of `per_switch` of `nodes` in order, under one spine
    (tier 2); switch name -> its nodes."""
    made: dict[str, set[str]] = {}
    for start in range(0, len(nodes), per_switch):
        name = f"{namespace}-s{start // per_switch}"
        members = nodes[start : start + per_switch]
        cluster_object(make_hyper_node(name).tier(1, "switch").nodes(*members).build())
        made[name] = set(members)
    spine = make_hyper_node(f"{namespace}-spine").tier(2, "spine").hyper_nodes(*made)
    cluster_object(spine.build())
    return made


def switches_of(placed: list[str], made: dict[str, set[str]]) -> set[str]:
    return {name for name, members in made.items() if members & set(placed)}


def nodes_of(api: k8s.ApiClient, namespace: str, names: list[str]) -> list[str]:
    return [
        (read(api, "v1", "Pod", name, namespace) or {}).get("spec", {}).get("nodeName", "")
        for name in names
    ]


def block(api: k8s.ApiClient, namespace: str, pod: PodFactory, nodes: list[str], cpu: str) -> None:
    """A pod of no gang asking `cpu` bound on each of `nodes`."""
    blockers = []
    for node in nodes:
        name = f"blocker-{node.rsplit('-', 1)[1]}"
        apply_object(api, pod(name).cpu(cpu).node_selector("kubernetes.io/hostname", node).build())
        blockers.append(name)
    wait_bound(api, namespace, blockers, len(blockers), "the blockers bound")


def topology_gang(
    api: k8s.ApiClient,
    namespace: str,
    pod: PodFactory,
    name: str,
    size: int,
    *,
    mode: str,
    cpu: str = "2",
) -> list[str]:
    group = make_group(name).ns(namespace).min_member(size).network(mode, 1)
    apply_object(api, group.build())
    members = [f"{name}-{index}" for index in range(size)]
    for member in members:
        apply_object(api, pod(member).cpu(cpu).group(name).build())
    return members


def test_the_tensorflow_job_lands_inside_one_switch(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, cluster_object: ClusterObject
) -> None:
    """Volcano's TensorFlow example, its workers scaled to 6 of 4 cpu (25 cpu: more than a node,
    less than a switch) and given `networkTopology: {mode: hard, highestTierAllowed: 1}`, runs
    whole inside one switch; a second one inside the other."""
    made = switches(namespace, own_nodes(8, cpu="8"), cluster_object)
    for name in ("tf-a", "tf-b"):
        submit(api, _training_job(name, namespace))
    for name in ("tf-a", "tf-b"):
        placed = [p["spec"]["nodeName"] for p in running(api, namespace, name, 7).values()]
        assert len(switches_of(placed, made)) == 1, (name, placed)
    both = [
        p["spec"]["nodeName"] for n in ("tf-a", "tf-b") for p in pods(api, namespace, n).values()
    ]
    assert switches_of(both, made) == set(made)


def test_with_fragmented_switches_only_a_whole_one_takes_a_hard_gang_and_a_soft_one_spans(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    """Blockers of 5 cpu on every node of s0 and on two of s1's: s0 has 12 cpu free (one pod of
    2 cpu per node), s1 22. A hard gang of 8 x 2 cpu fits in s1 only, and takes it; a second
    waits whole, though 18 cpu are free over both switches, and says what it needs; a soft gang
    of 6 x 2 cpu, which no switch holds whole any more, spans both."""
    nodes = own_nodes(8, cpu="8")
    made = switches(namespace, nodes, cluster_object)
    s0, s1 = sorted(made)
    block(api, namespace, pod, nodes[:6], "5")

    first = topology_gang(api, namespace, pod, "hard-a", 8, mode="hard")
    wait_bound(api, namespace, first, 8, "the first hard gang bound")
    assert switches_of(nodes_of(api, namespace, first), made) == {s1}

    second = topology_gang(api, namespace, pod, "hard-b", 8, mode="hard")
    words = f"needs 16 cpu inside one tier-1 HyperNode; the largest free is 12 cpu in {s0}"
    wait_until(
        lambda: all(
            refused_as(api, namespace, "hard-b", words)(read(api, "v1", "Pod", m, namespace) or {})
            for m in second
        ),
        timeout=60,
        what="the second hard gang refused for its switch",
    )

    soft = topology_gang(api, namespace, pod, "soft", 6, mode="soft")
    wait_bound(api, namespace, soft, 6, "the soft gang bound")
    assert switches_of(nodes_of(api, namespace, soft), made) == {s0, s1}
    assert bound(api, namespace, second) == []  # it waits whole


def _training_job(name: str, namespace: str) -> dict[str, Any]:
    body = copy.deepcopy(example("tf-dist-mnist.yaml", namespace))
    body["metadata"]["name"] = name
    body["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    body["spec"]["minAvailable"] = 7
    toleration = {"key": TEST_KEY, "operator": "Equal", "value": namespace, "effect": "NoSchedule"}
    for task in body["spec"]["tasks"]:
        spec = task["template"]["spec"]
        spec.setdefault("nodeSelector", {})[TEST_KEY] = namespace
        spec.setdefault("tolerations", []).append(toleration)
        if task["name"] == "worker":
            task["replicas"] = 6
            for container in spec["containers"]:
                container["resources"] = {
                    "requests": {"cpu": "4", "memory": "2Gi"},
                    "limits": {"cpu": "4", "memory": "2Gi"},
                }
    return body


def test_each_partition_of_a_job_lands_inside_one_switch(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    """A Job whose task of 8 workers of 4 cpu is cut into 2 partitions of 4, each hard within a
    switch. Blockers leave each switch 24 cpu: room for one partition (16 cpu) and not two, so
    a partition placed across switches, or both in one, would not do. Each partition runs
    inside one switch, and the two in the two switches."""
    nodes = own_nodes(8, cpu="8")
    made = switches(namespace, nodes, cluster_object)
    block(api, namespace, pod, [nodes[0], nodes[1], nodes[4], nodes[5]], "4")

    body = make_job("rings").ns(namespace).pinned(TEST_KEY, namespace).task("worker", 8, cpu="4")
    built = body.build()
    built["spec"]["tasks"][0]["partitionPolicy"] = {
        "totalPartitions": 2,
        "partitionSize": 4,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    submit(api, built)
    placed = running(api, namespace, "rings", 8)
    by_partition: dict[str, list[str]] = {}
    for member in placed.values():
        partition = member["metadata"]["labels"][PARTITION_KEY]
        by_partition.setdefault(partition, []).append(member["spec"]["nodeName"])
    assert sorted(by_partition) == ["0", "1"]
    leaves = [switches_of(on, made) for on in by_partition.values()]
    assert all(len(leaf) == 1 for leaf in leaves), by_partition
    assert set().union(*leaves) == set(made)
