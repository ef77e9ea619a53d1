"""Gang cases through the real stock kube-scheduler and Lahar, each on nodes of its own.

Where the stock scheduler alone behaves differently, the same pods are run under it too: the
difference is the reason Lahar exists.
"""

from __future__ import annotations

import time

from kubernetes import client as k8s

from extender import devcluster
from extender.kube import apply_object, condition, pod_when, wait_until
from tests.builders import make_group
from tests.e2e.conftest import (
    NodeFactory,
    PodFactory,
    lahar_metric,
    wait_explained,
)
from tests.e2e.gangs import (
    bound,
    finish,
    held_by_lahar,
    refused_as,
    submit_gang,
    wait_bound,
    wait_phase,
    whole,
)


def submit_pair(
    api: k8s.ApiClient, namespace: str, pod: PodFactory, round_: int, scheduler: str = "lahar"
) -> dict[str, list[str]]:
    """Two gangs of 3 pods x 2 cpu (each fits 2 nodes of 4 cpu alone, not both), their pods
    created interleaved: the moment both jobs are submitted together."""
    gangs: dict[str, list[str]] = {f"r{round_}-a": [], f"r{round_}-b": []}
    for name in gangs:
        apply_object(api, make_group(name).ns(namespace).min_member(3).build())
    for index in range(3):
        for name, members in gangs.items():
            member = f"{name}-{index}"
            apply_object(api, pod(member, scheduler).cpu("2").group(name).build())
            members.append(member)
    return gangs


def test_two_gangs_submitted_together_never_split_over_twenty_rounds(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    own_nodes(2, cpu="4")
    partial_before = lahar_metric(dev_cluster, "lahar_partial_gangs_total")
    for round_ in range(20):
        gangs = submit_pair(api, namespace, pod, round_)
        first = wait_until(
            lambda gangs=gangs: whole(api, namespace, gangs),
            timeout=60,
            what=f"round {round_}: one gang to be bound whole",
        )
        second = next(g for g in gangs if g != first)
        assert bound(api, namespace, gangs[second]) == [], f"round {round_}: {second} split"
        finish(api, namespace, gangs[first])
        wait_bound(api, namespace, gangs[second], 3, f"round {round_}: {second} to follow")
        finish(api, namespace, gangs[second])
    assert lahar_metric(dev_cluster, "lahar_partial_gangs_total") == partial_before


def test_the_stock_scheduler_alone_splits_two_gangs_submitted_together(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, pod: PodFactory
) -> None:
    own_nodes(2, cpu="4")
    gangs = submit_pair(api, namespace, pod, 0, scheduler="default-scheduler")
    everything = [member for members in gangs.values() for member in members]
    wait_bound(api, namespace, everything, 4, "the stock scheduler to fill both nodes")
    counts = sorted(len(bound(api, namespace, members)) for members in gangs.values())
    assert counts == [2, 2]  # both hold capacity, neither can run


def test_members_beyond_min_member_bind_once_the_gang_stands(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, pod: PodFactory
) -> None:
    """minMember 2 of 4 replicas on room for 3: the gang stands with 2, one extra member joins,
    the last waits for room with the plain reason (the gang is not blocked by it)."""
    own_nodes(1, cpu="3")
    names = submit_gang(api, namespace, pod, "elastic", 4, min_member=2)
    wait_bound(api, namespace, names, 3, "minMember 2 and one extra member to be bound")
    [left] = [name for name in names if name not in bound(api, namespace, names)]
    pod_when(
        api,
        namespace,
        left,
        "to be refused for room, not for its gang",
        lambda p: "Insufficient cpu" in str(p.get("status", {}).get("conditions")),
    )
    status = wait_phase(api, namespace, "elastic", "Running", running=3)
    assert status["running"] == 3


def test_a_pod_group_created_after_its_pods_lets_them_in(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, pod: PodFactory
) -> None:
    own_nodes(1, cpu="4")
    names = submit_gang(api, namespace, pod, "late", 3, group=False)
    for name in names:  # behind Lahar's gate: no PodGroup, nothing to admit
        pod_when(api, namespace, name, "to wait behind Lahar's gate", held_by_lahar)
    time.sleep(1)
    assert bound(api, namespace, names) == []
    created = time.monotonic()
    apply_object(api, make_group("late").ns(namespace).min_member(3).build())
    wait_bound(api, namespace, names, 3, "the gang to bind once its PodGroup exists")
    print(f"gang bound {time.monotonic() - created:.2f}s after its PodGroup was created")


def test_a_pod_whose_pod_group_never_appears_says_so(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    dev_cluster: devcluster.DevCluster,
) -> None:
    own_nodes(1, cpu="4")
    [name] = submit_gang(api, namespace, pod, "ghost", 1, group=False)
    pod_when(api, namespace, name, "to wait behind Lahar's gate", held_by_lahar)
    ghost = f"{namespace}/ghost"
    wait_explained(dev_cluster, ghost, f"waiting: gang {ghost}: PodGroup {ghost} does not exist")
    assert bound(api, namespace, [name]) == []


def test_eight_gangs_of_mixed_sizes_all_finish_whole(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    """12 cpu; gangs of 2, 3, 4, 5 one-cpu pods: about 3 run at a time. Each gang is bound
    whole or not at all, and every one finishes."""
    own_nodes(3, cpu="4")
    partial_before = lahar_metric(dev_cluster, "lahar_partial_gangs_total")
    sizes = [2, 3, 4, 5, 4, 3, 2, 5]
    gangs = {
        f"mix-{i}": submit_gang(api, namespace, pod, f"mix-{i}", size)
        for i, size in enumerate(sizes)
    }
    done: set[str] = set()
    most_at_once = 0

    def progress() -> bool:
        nonlocal most_at_once
        started = [g for g, members in gangs.items() if bound(api, namespace, members)]
        running = [g for g in started if g not in done]
        most_at_once = max(most_at_once, len(running))
        for name in running:
            members = gangs[name]
            # Bindings of one gang are created together; a gang seen split must be whole
            # a moment later, or it is a partial gang.
            wait_bound(api, namespace, members, len(members), f"{name} to be bound whole")
            finish(api, namespace, members)
            done.add(name)
        return len(done) == len(gangs)

    wait_until(progress, timeout=180, what="all 8 gangs to run whole and finish")
    assert lahar_metric(dev_cluster, "lahar_partial_gangs_total") == partial_before
    assert most_at_once >= 2  # they did share the cluster


def test_the_stock_scheduler_alone_strands_gangs_of_mixed_sizes(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, pod: PodFactory
) -> None:
    own_nodes(3, cpu="4")
    sizes = [2, 3, 4, 5, 4, 3, 2, 5]
    gangs = [
        submit_gang(api, namespace, pod, f"mix-{i}", size, scheduler="default-scheduler")
        for i, size in enumerate(sizes)
    ]
    everything = [member for members in gangs for member in members]
    wait_bound(api, namespace, everything, 12, "the stock scheduler to fill all 12 cpu")
    split = [m for m in gangs if 0 < len(bound(api, namespace, m)) < len(m)]
    assert split, "the stock scheduler placed pods one at a time, so some gang is split"


def test_pod_groups_made_as_kubeflow_and_the_spark_operator_make_them(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, pod: PodFactory
) -> None:
    """No Lahar Job: the training-operator creates a PodGroup named after its PyTorchJob with
    minMember = all replicas and minResources, then pods with the group annotation and
    `schedulerName: volcano`. The Spark operator creates `spark-<app>-pg` with minMember 1 and
    the whole application's minResources, then the driver (executors come later)."""
    own_nodes(1, cpu="4")
    torch = make_group("pytorch-dist").ns(namespace).min_member(3).min_resources(cpu="3")
    apply_object(api, torch.build())
    replicas = ["pytorch-dist-master-0", "pytorch-dist-worker-0", "pytorch-dist-worker-1"]
    for name in replicas:
        member = pod(name, "volcano").cpu("1").group("pytorch-dist")
        apply_object(api, member.label("training.kubeflow.org/job-name", "pytorch-dist").build())
    wait_bound(api, namespace, replicas, 3, "the PyTorchJob's pods to be bound together")
    wait_phase(api, namespace, "pytorch-dist", "Running")

    spark = make_group("spark-pi-pg").ns(namespace).min_member(1).min_resources(cpu="3")
    apply_object(api, spark.build())
    apply_object(api, pod("spark-pi-driver", "volcano").cpu("1").group("spark-pi-pg").build())
    pod_when(
        api,
        namespace,
        "spark-pi-driver",
        "to wait until the application's minResources are free",
        refused_as(api, namespace, "spark-pi-pg", "minResources need cpu 3, 1 free"),
    )
    status = wait_phase(api, namespace, "spark-pi-pg", "Pending")
    assert condition(status, "Unschedulable")["reason"] == "NotEnoughResources"
    finish(api, namespace, replicas)
    wait_bound(api, namespace, ["spark-pi-driver"], 1, "the driver once the training job ended")
    executors = [f"spark-pi-exec-{i}" for i in (1, 2)]
    for name in executors:
        apply_object(api, pod(name, "volcano").cpu("1").group("spark-pi-pg").build())
    wait_bound(api, namespace, executors, 2, "the executors, members beyond minMember")
