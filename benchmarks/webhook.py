"""Time the admission webhook's rules on the jobs users send, in process (no HTTP, no cluster).

    .venv/bin/python benchmarks/webhook.py [--runs 2000]

For Volcano's TensorFlow example and for larger ones (100 and 1,000 tasks, and an UPDATE of a job
whose templates make it about 1.5 MiB, near what etcd stores), prints the p50 and p99 time of
the defaults (`mutate_job`) and of the rules (`validate_job`) as the webhook runs them, queue
lookups included. These bound what an API request waits on the webhook (its timeout is 5 s).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.admission.admit import Settings, mutate_job, validate_job
from extender.api.admission import AdmissionRequest
from extender.api.scheduling import Queue

ROOT = Path(__file__).resolve().parents[1]


class Queues:
    def queue(self, name: str) -> Queue | None:
        return Queue.model_validate({"metadata": {"name": name}})

    def pod_groups_in(self, queue: str) -> Sequence[str]:
        return []

    def children(self, name: str) -> Sequence[Queue]:
        return []


def request(job: dict[str, Any], operation: str = "CREATE", old: Any = None) -> AdmissionRequest:
    gvr = {"group": "batch.volcano.sh", "version": "v1alpha1"}
    return AdmissionRequest.model_validate(
        {
            "uid": "bench",
            "kind": {**gvr, "kind": "Job"},
            "resource": {**gvr, "resource": "jobs"},
            "name": job["metadata"]["name"],
            "namespace": "bench",
            "operation": operation,
            "object": job,
            "oldObject": old,
        }
    )


def widened(job: dict[str, Any], tasks: int) -> dict[str, Any]:
    wide = copy.deepcopy(job)
    template = wide["spec"]["tasks"][1]
    wide["spec"]["tasks"] = [{**copy.deepcopy(template), "name": f"t{i}"} for i in range(tasks)]
    wide["spec"]["minAvailable"] = tasks * template["replicas"]
    return wide


def timed(rule: Callable[..., Any], review: AdmissionRequest, runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        outcome = rule(review, Queues(), Settings())
        samples.append((time.perf_counter() - started) * 1000)
    assert outcome.decision.allowed, outcome.message
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="reviews timed per case")
    runs = parser.parse_args().runs
    tf = yaml.safe_load((ROOT / "examples" / "tf-dist-mnist.yaml").read_text())
    tf["metadata"]["namespace"] = "bench"
    big = widened(tf, 1000)
    heavy = widened(tf, 400)
    for task in heavy["spec"]["tasks"]:
        task["template"]["metadata"] = {"annotations": {"note": "x" * 3000}}
    scaled = copy.deepcopy(heavy)
    scaled["spec"]["tasks"][0]["replicas"] = 4
    size = len(yaml.safe_dump(heavy)) / 2**20
    cases = [
        ("tf-dist-mnist (2 tasks)", request(tf), max(runs, 1)),
        ("100 tasks", request(widened(tf, 100)), max(runs // 10, 1)),
        ("1,000 tasks", request(big), max(runs // 100, 1)),
        (f"UPDATE of a {size:.1f} MiB job", request(scaled, "UPDATE", heavy), max(runs // 100, 1)),
    ]
    print(f"{'job':<30} {'defaults p50':>13} {'p99':>9} {'rules p50':>11} {'p99':>9}  runs")
    for name, review, count in cases:
        mutate = timed(mutate_job, review, count)
        validate = timed(validate_job, review, count)
        print(
            f"{name:<30} {mutate[0]:>10.3f} ms {mutate[1]:>6.3f} ms "
            f"{validate[0]:>8.3f} ms {validate[1]:>6.3f} ms  {count}"
        )


if __name__ == "__main__":
    main()
