"""Preemption of a Volcano Job whose controller makes its pods again, on the dev cluster: the stock
kube-scheduler calling Lahar's extender (running `policy/preemption.yaml`), Lahar's Job controller,
KWOK playing the kubelet.

A low-priority Job `held` fills the test's one node; a high-priority Job `urgent` needs its room.
The extender evicts held for urgent, and held's controller makes held's pods again at once: with
no policy (the pods missing are made again, at the same version) and with `PodEvicted ->
RestartJob` (every pod made again, at the next version), often before the extender's watch has
shown the evictions. The room freed goes to urgent, as in Volcano: urgent runs within `BOUND`
seconds, held is evicted once and only once however long urgent runs, and held's new pods wait
their turn in the fair order behind urgent, and run once urgent has ended.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.devcluster.lifecycle import end_pod
from extender.kube import wait_until
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, ClusterObject, NodeFactory, events, priority_class
from tests.e2e.jobs import job, pods, running, submit

# Seconds from urgent's submission to its pods Running: its PodGroup refused, the preemption loop's
# pass (woken by the refusal), the evictions, held's pods gone (KWOK), urgent admitted, its pods
# made, bound through the barrier and reported Running; a few seconds on a busy two-core machine.
BOUND = 30.0
WATCHED = 15.0  # seconds urgent is watched running: three of preemption.yaml's 5 s intervals


def bound_pods(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, dict[str, Any]]:
    """The Job's pods bound to a node and not being deleted, by uid."""
    return {
        p["metadata"]["uid"]: p
        for p in pods(api, namespace, name).values()
        if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    }


def uids(found: dict[str, dict[str, Any]]) -> set[str]:
    return {p["metadata"]["uid"] for p in found.values()}


def preempted(api: k8s.ApiClient, namespace: str, group: str) -> int:
    """How many times Lahar said it evicted gang `group` (its Preempted Events)."""
    return len(events(api, namespace, reason="Preempted", kind="PodGroup", name=group))


@pytest.mark.usefixtures("preempting")
@pytest.mark.parametrize(
    "policies",
    [
        pytest.param([], id="no-policy"),
        pytest.param([("PodEvicted", "RestartJob")], id="restart-job"),
    ],
)
def test_the_room_freed_by_evicting_a_job_goes_to_the_preemptor_not_to_the_jobs_new_pods(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    cluster_object: ClusterObject,
    policies: list[tuple[str, str]],
) -> None:
    own_nodes(1, cpu="4")
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 10), (high, 1000)):
        cluster_object(priority_class(name, value))
    held = make_job("held").ns(namespace).task("main", 2, cpu="2").pinned(TEST_KEY, namespace)
    for event, action in policies:
        held = held.policy(event, action)
    submit(api, held.priority_class(low).build())
    victims = uids(running(api, namespace, "held", 2))
    group = f"held-{job(api, namespace, 'held')['metadata']['uid']}"
    urgent = make_job("urgent").ns(namespace).task("main", 2, cpu="2").pinned(TEST_KEY, namespace)

    submit(api, urgent.priority_class(high).build())
    wait_until(
        lambda: len(bound_pods(api, namespace, "urgent")) == 2,
        timeout=BOUND,
        what="the preemptor's two pods bound",
        describe=lambda: (
            f"urgent: {sorted(bound_pods(api, namespace, 'urgent'))}, held bound: "
            f"{sorted(bound_pods(api, namespace, 'held'))}, held evicted "
            f"{preempted(api, namespace, group)} times"
        ),
    )
    first = uids(running(api, namespace, "urgent", 2))
    assert not victims & uids(pods(api, namespace, "held"))  # (the victims are gone)

    time.sleep(WATCHED)  # urgent keeps its room: nobody evicts it, held is not evicted again
    assert uids(running(api, namespace, "urgent", 2)) == first
    assert bound_pods(api, namespace, "held") == {}
    assert preempted(api, namespace, group) == 1
    assert len(events(api, namespace, reason="Preempting", kind="PodGroup")) == 1

    for name in pods(api, namespace, "urgent"):  # urgent ends: held's new pods have their turn
        end_pod(api, namespace, name, exit_code=0)
    running(api, namespace, "held", 2)
    assert preempted(api, namespace, group) == 1
