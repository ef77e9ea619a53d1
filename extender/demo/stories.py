"""The demo's two stories, told with Volcano Jobs through Lahar's webhook, controller, extender
and the stock kube-scheduler, exactly as a user submits them:

1. Volcano's TensorFlow example (`examples/tf-dist-mnist.yaml`, unchanged): placed whole, run, and
   completed when its workers end (its TaskCompleted -> CompleteJob policy).
2. Contention: two copies of it grown to 1 ps + 5 workers (11 cpu, minAvailable 6), submitted
   together on two 8-cpu nodes that fit one, not both. Pod by pod, the stock scheduler would
   place part of each (both stuck); through Lahar one runs whole and the other waits whole, with
   its PodGroup saying why, and starts as soon as the first one's workers end.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from extender.demo.job_watch import JobWatch
from extender.demo.live_table import JobRow
from extender.demo.step import NAMESPACE, Step
from extender.devcluster.lifecycle import end_pod
from extender.devcluster.paths import repository
from extender.kube import apply_object

EXAMPLE = Path("examples") / "tf-dist-mnist.yaml"
CONTENDERS = ("tf-a", "tf-b")
CONTENDER_WORKERS = 5
TIMEOUT = 120.0


def tensorflow_example() -> dict[str, Any]:
    """Volcano's TensorFlow example as shipped in examples/, in the demo's namespace."""
    job: dict[str, Any] = yaml.safe_load((repository() / EXAMPLE).read_text())
    job["metadata"]["namespace"] = NAMESPACE
    return job


def contender(name: str) -> dict[str, Any]:
    """The example grown to 1 ps + 5 workers, all of them needed (minAvailable 6)."""
    job = copy.deepcopy(tensorflow_example())
    job["metadata"]["name"] = name
    worker = next(task for task in job["spec"]["tasks"] if task["name"] == "worker")
    worker["replicas"] = CONTENDER_WORKERS
    job["spec"]["minAvailable"] = 1 + CONTENDER_WORKERS
    return job


def _workers(job: dict[str, Any]) -> list[str]:
    name = job["metadata"]["name"]
    worker = next(task for task in job["spec"]["tasks"] if task["name"] == "worker")
    return [f"{name}-worker-{index}" for index in range(worker["replicas"])]


def _finish(api: k8s.ApiClient, job: dict[str, Any]) -> None:
    """Its workers end with exit code 0, as a finished training run's would."""
    for pod in _workers(job):
        end_pod(api, NAMESPACE, pod, exit_code=0)


def _whole(row: JobRow | None) -> bool:
    return row is not None and row.minimum > 0 and row.bound >= row.minimum


def show_tensorflow(api: k8s.ApiClient, watch: JobWatch, step: Step) -> None:
    job = tensorflow_example()
    name = job["metadata"]["name"]
    apply_object(api, job)
    watch.submitted(name)
    step(
        f"submitted {EXAMPLE} unchanged: Job {name} (1 ps + 2 workers, minAvailable 3, "
        "schedulerName volcano)"
    )
    watch.until(
        f"Job {name} to run",
        lambda rows: _whole(rows[name]) and rows[name].phase == "Running",
        TIMEOUT,
    )
    step(f"Job {name} Running: its gang was placed whole")
    _finish(api, job)
    step(f"its workers ended (exit 0): the TaskCompleted policy completes Job {name}")
    watch.until(f"Job {name} to complete", lambda rows: rows[name].phase == "Completed", TIMEOUT)


def show_contention(api: k8s.ApiClient, watch: JobWatch, step: Step) -> None:
    jobs = {name: contender(name) for name in CONTENDERS}
    for name, job in jobs.items():
        apply_object(api, job)
        watch.submitted(name)
    step(
        f"submitted {' and '.join(CONTENDERS)} together: each 1 ps + {CONTENDER_WORKERS} "
        f"workers (11 cpu, minAvailable {1 + CONTENDER_WORKERS}); the two 8-cpu nodes fit one "
        "of them, not both"
    )
    first: list[str] = []

    def one_runs_one_waits(rows: dict[str, JobRow]) -> bool:
        running = [n for n in CONTENDERS if _whole(rows[n]) and rows[n].phase == "Running"]
        waiting = [n for n in CONTENDERS if rows[n].waiting_for]
        if len(running) == 1 and waiting and waiting[0] != running[0]:
            first[:] = running
            return True
        return False

    watch.until("one Job to run whole and the other to wait", one_runs_one_waits, TIMEOUT)
    winner = first[0]
    waiter = next(n for n in CONTENDERS if n != winner)
    row = watch.records[waiter].row
    assert row is not None
    why = "\n    ".join(row.waiting_for.split(". "))
    step(
        f"Job {winner} runs whole; Job {waiter} waits whole with {row.bound} of its pods placed; "
        f"its PodGroup says why (`lahar explain {waiter} -n {NAMESPACE}` prints it):\n    {why}"
    )
    _finish(api, jobs[winner])
    ended = time.monotonic()
    step(f"Job {winner}'s workers ended (exit 0); its capacity frees")
    watch.until(f"Job {waiter} to run", lambda rows: _whole(rows[waiter]), TIMEOUT)
    step(f"Job {waiter} placed whole {time.monotonic() - ended:.2f} s after {winner} ended")
    watch.until(
        f"Job {winner} to complete and {waiter} to run",
        lambda rows: rows[winner].phase == "Completed" and rows[waiter].phase == "Running",
        TIMEOUT,
    )
