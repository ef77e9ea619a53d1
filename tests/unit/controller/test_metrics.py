"""The controller's `lahar_jobs{queue,phase}`: the Jobs in its store by queue and phase, counted at
scrape time (a Job with no phase yet is Pending), beside `lahar_controller_jobs`, their total."""

from __future__ import annotations

import pytest

from extender.api.batch import Phase
from extender.controller.metrics import ControllerMetrics
from extender.controller.store import JobStore
from extender.controller.workqueue import WorkQueue
from tests.batch_builders import make_job


def _jobs(metrics: ControllerMetrics) -> dict[tuple[str, str], float]:
    return {
        (sample.labels["queue"], sample.labels["phase"]): sample.value
        for family in metrics.registry.collect()
        if family.name == "lahar_jobs"
        for sample in family.samples
    }


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        pytest.param([], {}, id="no Job: no series"),
        pytest.param([("a", "ml", None)], {("ml", "Pending"): 1}, id="no phase yet: Pending"),
        pytest.param(
            [("a", "ml", Phase.RUNNING), ("b", "ml", Phase.RUNNING), ("c", "ml", Phase.FAILED)],
            {("ml", "Running"): 2, ("ml", "Failed"): 1},
            id="by phase",
        ),
        pytest.param(
            [("a", "ml", Phase.RUNNING), ("b", "", Phase.RUNNING), ("c", "batch", Phase.ABORTED)],
            {("ml", "Running"): 1, ("default", "Running"): 1, ("batch", "Aborted"): 1},
            id="by queue, default when none is named",
        ),
        pytest.param(
            [(f"j{i}", "ml", phase) for i, phase in enumerate(Phase)],
            {("ml", phase.value): 1 for phase in Phase},
            id="every phase",
        ),
    ],
)
def test_jobs_by_queue_and_phase(
    jobs: list[tuple[str, str, Phase | None]], expected: dict[tuple[str, str], int]
) -> None:
    store = JobStore()
    metrics = ControllerMetrics(WorkQueue(), store)
    for name, queue, phase in jobs:
        job = make_job(name).set("spec.queue", queue)
        store.upsert_job((job.status(phase=phase.value) if phase else job).model())
    assert _jobs(metrics) == expected
    total = metrics.registry.get_sample_value("lahar_controller_jobs")
    assert total == len(jobs)


def test_the_counts_follow_the_store_at_each_scrape() -> None:
    store = JobStore()
    metrics = ControllerMetrics(WorkQueue(), store)
    running = make_job("a").set("spec.queue", "ml").status(phase="Running").model()
    store.upsert_job(running)
    assert _jobs(metrics) == {("ml", "Running"): 1}
    store.upsert_job(make_job("a").set("spec.queue", "ml").status(phase="Completed").model())
    assert _jobs(metrics) == {("ml", "Completed"): 1}
    store.delete_job(running)
    assert _jobs(metrics) == {}
