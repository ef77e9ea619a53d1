"""The gang story of the demo: two training jobs that each fit the cluster alone, not together.

Each job is 2 parameter servers + 2 workers of 3 cpu (12 cpu) with a PodGroup of minMember 4; the
two 8-cpu nodes fit one job. Their pods are created interleaved, as two jobs submitted together.
The stock scheduler alone would place pods one at a time and leave both jobs half placed; through
Lahar one job is bound whole, the other waits with nothing placed and its PodGroup says why, and
it starts as soon as the first job's pods end.
"""

from __future__ import annotations

import time

from kubernetes import client as k8s

from extender.demo.objects import NAMESPACE, Step, pod_body, pod_group_body
from extender.devcluster.lifecycle import end_pod
from extender.kube import (
    apply_object,
    condition,
    delete,
    list_objects,
    pod_group_status,
    wait_until,
)

JOBS = ("tf-a", "tf-b")
TASKS = ("ps-0", "ps-1", "worker-0", "worker-1")


def show_gangs(api: k8s.ApiClient, step: Step) -> None:
    _clear(api, step)
    for job in JOBS:
        apply_object(api, pod_group_body(job, min_member=len(TASKS)))
    for task in TASKS:
        for job in JOBS:
            member = pod_body(f"{job}-{task}", "lahar", cpu="3", group=job)
            member["metadata"]["labels"]["lahar-demo/job"] = job
            apply_object(api, member)
    step(
        f"submitted jobs {', '.join(JOBS)} together: each 2 ps + 2 workers of 3 cpu, PodGroup "
        f"minMember {len(TASKS)}; the two nodes fit one job, not both"
    )
    running = wait_until(
        lambda: next((job for job in JOBS if _bound(api, job) == len(TASKS)), None),
        timeout=60,
        what="one job to be bound whole",
    )
    waiting = next(job for job in JOBS if job != running)
    wait_until(lambda: _phase(api, running) == "Running", timeout=60, what=f"{running} Running")
    step(f"job {running}: all {len(TASKS)} pods bound together; PodGroup {running} Running")
    status = wait_until(
        lambda: _unschedulable(api, waiting), timeout=60, what=f"PodGroup {waiting}'s reason"
    )
    step(
        f"job {waiting}: {_bound(api, waiting)} pods bound, PodGroup {_phase(api, waiting)}, "
        f"Unschedulable: {status}"
    )
    for task in TASKS:
        end_pod(api, NAMESPACE, f"{running}-{task}", exit_code=0)
    ended = time.monotonic()
    step(f"job {running} finished (its pods ended); capacity is free")
    wait_until(
        lambda: _bound(api, waiting) == len(TASKS),
        timeout=60,
        what=f"job {waiting} to be bound whole",
    )
    step(
        f"job {waiting}: all {len(TASKS)} pods bound {time.monotonic() - ended:.2f}s after "
        f"{running} ended (Lahar woke its parked pods)"
    )
    wait_until(lambda: _phase(api, running) == "Completed", timeout=60, what=f"{running} done")
    step(f"PodGroups: {running} {_phase(api, running)}, {waiting} {_phase(api, waiting)}")


def _clear(api: k8s.ApiClient, step: Step) -> None:
    """Delete the earlier steps' pods, so the gang story has the whole cluster."""
    pods = list_objects(api, "v1", "Pod", namespace=NAMESPACE)
    for pod in pods:
        delete(api, "v1", "Pod", pod["metadata"]["name"], NAMESPACE)
    wait_until(
        lambda: not list_objects(api, "v1", "Pod", namespace=NAMESPACE),
        timeout=60,
        what="the earlier pods to be gone",
    )
    step(f"deleted the {len(pods)} earlier pods: both nodes are empty")


def _bound(api: k8s.ApiClient, job: str) -> int:
    members = list_objects(
        api, "v1", "Pod", namespace=NAMESPACE, label_selector=f"lahar-demo/job={job}"
    )
    return sum(1 for pod in members if pod["spec"].get("nodeName"))


def _phase(api: k8s.ApiClient, job: str) -> str:
    return str(pod_group_status(api, NAMESPACE, job).get("phase", "-"))


def _unschedulable(api: k8s.ApiClient, job: str) -> str | None:
    found = condition(pod_group_status(api, NAMESPACE, job), "Unschedulable")
    return f"{found['reason']}: {found['message']}" if found.get("status") == "True" else None
