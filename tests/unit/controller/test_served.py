"""The scheduler names the controller serves (`--scheduler-name`): which Jobs it reconciles, and
that a Job for another scheduler is left alone by a reconcile (nothing written, its Command left,
nothing logged above DEBUG)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest
from kubernetes import client as k8s

from extender.api.batch import Command
from extender.api.scheduling import SERVED_SCHEDULERS as SCHEDULER_NAMES
from extender.controller.reconcile import Reconciler
from extender.controller.served import Served
from extender.controller.store import JobStore
from tests.builders import make_job, make_job_pod


@pytest.mark.parametrize(
    ("names", "scheduler", "served"),
    [
        (SCHEDULER_NAMES, "lahar", True),
        (SCHEDULER_NAMES, "volcano", True),
        (SCHEDULER_NAMES, "", True),
        (SCHEDULER_NAMES, "default-scheduler", False),
        (SCHEDULER_NAMES, "Lahar", False),
        (("volcano",), "volcano", True),
        (("volcano",), "lahar", False),
        (("volcano",), "", True),
        (("volcano", "lahar"), "", True),
        (("gpu", "lahar"), "gpu", True),
    ],
    ids=[
        "lahar by default",
        "volcano by default",
        "none named: the first, lahar",
        "another scheduler",
        "names are exact",
        "only volcano: volcano",
        "only volcano: not lahar",
        "only volcano: a job naming none is volcano's",
        "a job naming none is the first name's",
        "a name of one's own",
    ],
)
def test_served(names: Sequence[str], scheduler: str, served: bool) -> None:
    job = make_job("a").task("w", 1)
    if scheduler:
        job = job.scheduler_name(scheduler)
    assert Served(names).serves(job.model()) is served


def test_the_defaults_are_lahars_two_profiles_and_a_job_naming_none_is_lahars() -> None:
    assert Served().names == ("lahar", "volcano")
    assert Served().scheduler_of(make_job("a").task("w", 1).model()) == "lahar"
    assert Served(("gpu", "gpu", "lahar")).names == ("gpu", "lahar")


def test_no_names_is_a_mistake() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Served(())


def test_a_job_for_another_scheduler_is_left_alone(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pods, no PodGroup, no status, its Command left in the store, no log above DEBUG."""
    store = JobStore()
    job = make_job("a").task("w", 2).scheduler_name("default-scheduler").model()
    store.upsert_job(job)
    store.upsert_pod(make_job_pod(job, "w", 0).terminating().model())  # an eviction to forget
    abort = Command.model_validate(
        {
            "metadata": {"name": "a-abortjob-x", "namespace": "default", "uid": "u-c"},
            "action": "AbortJob",
            "target": {"kind": "Job", "name": "a", "uid": job.metadata.uid},
        }
    )
    store.upsert_command(abort)
    reconciler = Reconciler(k8s.ApiClient(), store, served=Served(SCHEDULER_NAMES))

    def written(*args: object) -> None:
        raise AssertionError(f"the controller wrote for a job it does not serve: {args}")

    for method in ("write", "fail_invalid", "write_status"):
        monkeypatch.setattr(reconciler.writer, method, written)
    with caplog.at_level(logging.DEBUG, logger="extender.controller"):
        again = asyncio.run(reconciler(job.key))
    assert again is None
    assert store.next_command(job.key) == abort
    assert store.take_evicted(job.key) == []
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "not served here" in caplog.records[0].getMessage()
