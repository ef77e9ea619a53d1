"""Gangs through the real stock kube-scheduler and Lahar: all or nothing, and the next one follows.

The story Lahar exists for: two training jobs of 2 parameter servers + 2 workers on two nodes
that fit one job. One job runs complete, the other waits with nothing placed and runs when the
first finishes. The same pods under the stock scheduler alone show what goes wrong without Lahar.
"""

from __future__ import annotations

import time

from kubernetes import client as k8s

from extender import devcluster
from extender.kube import apply_object, condition, pod_when, wait_until
from tests.builders import make_group
from tests.e2e.conftest import NodeFactory, PodFactory, lahar_metric
from tests.e2e.gangs import (
    bound,
    finish,
    group_events,
    refused_as,
    wait_bound,
    wait_phase,
    whole,
)

TASKS = ("ps", "ps", "worker", "worker")


def submit_jobs(
    api: k8s.ApiClient,
    namespace: str,
    pod: PodFactory,
    scheduler: str = "lahar",
) -> dict[str, list[str]]:
    """Two PodGroups of minMember 4, then their pods (2 ps + 2 workers, 2 cpu each) created
    interleaved, the way two jobs submitted together arrive."""
    jobs: dict[str, list[str]] = {"job-a": [], "job-b": []}
    for job in jobs:
        apply_object(api, make_group(job).ns(namespace).min_member(4).build())
    for index, task in enumerate(TASKS):
        for job, names in jobs.items():
            name = f"{job}-{task}-{index % 2}"
            apply_object(api, pod(name, scheduler).cpu("2").group(job).task(task).build())
            names.append(name)
    return jobs


def test_one_job_runs_whole_the_other_waits_with_nothing_then_follows(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    own_nodes(2, cpu="4")
    jobs = submit_jobs(api, namespace, pod)

    running = wait_until(
        lambda: whole(api, namespace, jobs), timeout=60, what="one job to have all 4 pods bound"
    )
    waiting = "job-b" if running == "job-a" else "job-a"
    for name in jobs[waiting]:  # each was tried and refused as a whole gang: nothing placed
        pod_when(
            api, namespace, name, "to be refused for its gang", refused_as(api, namespace, waiting)
        )
    assert bound(api, namespace, jobs[waiting]) == []
    # The PodGroups say the same, with Volcano's phases and reasons, and events to describe.
    scheduled = condition(wait_phase(api, namespace, running, "Running"), "Scheduled")
    assert scheduled["status"] == "True"
    status = wait_phase(api, namespace, waiting, "Pending", reason="NotEnoughResources")
    unschedulable = condition(status, "Unschedulable")
    assert (unschedulable["status"], unschedulable["reason"]) == ("True", "NotEnoughResources")
    assert unschedulable["message"].startswith(f"gang {namespace}/{waiting}: ")
    assert "pending of task" in unschedulable["message"]  # what each kind of member lacks
    assert "queue default: allocated " in unschedulable["message"]
    said = f"gang {namespace}/{waiting}: "  # the condition's figures may have moved since
    wait_until(
        lambda: any(
            reason == "Unschedulable" and message.startswith(said)
            for reason, message in group_events(api, namespace, waiting)
        ),
        timeout=30,
        what=f"an Unschedulable event on PodGroup {waiting}",
    )

    def sent() -> float:  # pods Lahar sent to the scheduler: gates lifted, parked pods woken
        return sum(
            lahar_metric(dev_cluster, name)
            for name in ("lahar_gang_gates_lifted_total", "lahar_gang_wakes_total")
        )

    wakes = sent()
    finished_at = time.monotonic()
    finish(api, namespace, jobs[running])
    wait_bound(api, namespace, jobs[waiting], 4, f"{waiting} to run after {running} finished")
    started_after = time.monotonic() - finished_at
    print(f"{waiting} had all 4 pods bound {started_after:.2f}s after {running} was ended")
    assert started_after < 30, f"{waiting} started {started_after:.1f}s after capacity freed"
    assert sent() > wakes  # Lahar let them in
    wait_phase(api, namespace, running, "Completed")
    wait_phase(api, namespace, waiting, "Running")
    reasons = [reason for reason, _ in group_events(api, namespace, running)]
    assert reasons.count("Scheduled") == 1 and reasons.count("Completed") == 1


def test_the_stock_scheduler_alone_splits_both_jobs(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    """The difference Lahar makes: without it, pods are placed one at a time in arrival order,
    so each job gets half its pods and neither can train."""
    own_nodes(2, cpu="4")
    jobs = submit_jobs(api, namespace, pod, scheduler="default-scheduler")
    everything = jobs["job-a"] + jobs["job-b"]
    wait_bound(api, namespace, everything, 4, "the stock scheduler to fill both nodes")
    counts = sorted(len(bound(api, namespace, names)) for names in jobs.values())
    assert counts == [2, 2]
