"""Queues, fairness and Lahar's own preemption through the real stock kube-scheduler.

Queues and PriorityClasses are cluster-scoped: each test names its own after its namespace and
deletes them afterwards. Victims are checked by what the API shows: whole gangs gone, the rest
untouched, and the preemptor's gang bound whole.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from extender.kube import apply_object, delete, pod_when
from tests.builders import make_queue
from tests.e2e.conftest import NodeFactory, PodFactory, events
from tests.e2e.gangs import alive, bound, refused_as, submit_gang, wait_bound


@pytest.fixture
def cluster_objects(api: k8s.ApiClient) -> Iterator[list[tuple[str, str, str]]]:
    """(apiVersion, kind, name) of cluster-scoped objects to delete after the test."""
    made: list[tuple[str, str, str]] = []
    yield made
    for api_version, kind, name in made:
        delete(api, api_version, kind, name)


def test_a_closed_queue_admits_nothing(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_objects: list[tuple[str, str, str]],
) -> None:
    own_nodes(1, cpu="4")
    queue = f"{namespace}-q"
    apply_object(api, make_queue(queue).build())
    cluster_objects.append(("scheduling.volcano.sh/v1beta1", "Queue", queue))
    k8s.CustomObjectsApi(api).patch_cluster_custom_object_status(  # state lives in the status
        "scheduling.volcano.sh", "v1beta1", "queues", queue, {"status": {"state": "Closed"}}
    )
    names = submit_gang(api, namespace, pod, "job", 2, queue=queue)
    for name in names:
        pod_when(
            api,
            namespace,
            name,
            "refused for the closed queue",
            refused_as(namespace, "job", "is Closed"),
        )
    assert bound(api, namespace, names) == []


def test_a_high_priority_gang_preempts_the_fewest_whole_lower_priority_gangs(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_objects: list[tuple[str, str, str]],
) -> None:
    own_nodes(2, cpu="4")
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 10), (high, 1000)):
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        apply_object(api, body)
        cluster_objects.append(("scheduling.k8s.io/v1", "PriorityClass", name))
    running = {
        "wide": submit_gang(api, namespace, pod, "wide", 2, cpu="2", priority_class=low),
        "one": submit_gang(api, namespace, pod, "one", 1, cpu="2", priority_class=low),
        "two": submit_gang(api, namespace, pod, "two", 1, cpu="2", priority_class=low),
    }
    for name, members in running.items():
        wait_bound(api, namespace, members, len(members), f"low-priority gang {name} bound")

    urgent = submit_gang(api, namespace, pod, "urgent", 2, cpu="1", priority_class=high)
    wait_bound(api, namespace, urgent, 2, "the high-priority gang bound whole")

    left = {name: alive(api, namespace, members) for name, members in running.items()}
    gone = [name for name, members in left.items() if not members]
    assert len(gone) == 1 and gone[0] in ("one", "two")  # one pod: fewer than "wide"'s two
    assert left["wide"] == running["wide"]  # untouched
    [said] = events(api, namespace, reason="Preempting", kind="PodGroup", name="urgent")
    assert f"{namespace}/{gone[0]}" in said["message"]
    assert events(api, namespace, reason="Preempted", kind="PodGroup", name=gone[0])


def test_a_queue_below_its_share_reclaims_from_one_above_it(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_objects: list[tuple[str, str, str]],
) -> None:
    own_nodes(2, cpu="4")
    starved, greedy = f"{namespace}-a", f"{namespace}-b"
    apply_object(api, make_queue(starved).build())
    apply_object(api, make_queue(greedy).deserved(cpu="4").build())  # holds 8 below
    for queue in (starved, greedy):
        cluster_objects.append(("scheduling.volcano.sh/v1beta1", "Queue", queue))
    held = [submit_gang(api, namespace, pod, f"b{i}", 2, cpu="1", queue=greedy) for i in range(4)]
    for members in held:
        wait_bound(api, namespace, members, 2, "queue b's gang bound")

    wanted = submit_gang(api, namespace, pod, "a0", 2, cpu="1", queue=starved)
    wait_bound(api, namespace, wanted, 2, "queue a's gang bound after reclaiming")

    left = [alive(api, namespace, members) for members in held]
    assert sorted(len(members) for members in left) == [0, 2, 2, 2]  # one whole gang reclaimed
    assert events(api, namespace, reason="Preempting", kind="PodGroup", name="a0")
