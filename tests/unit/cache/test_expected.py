"""The pods a Job waiting for its gang's admission will have, as the cluster state shows them."""

from __future__ import annotations

import pytest

from extender.api.batch import Job
from extender.api.job_pods import expected_uid, expecting, is_expected
from extender.api.objects import PriorityClass
from extender.api.scheduling import GANG_GATE, held_by_lahar
from extender.cache.events import GangChanged
from extender.cache.state import ClusterState
from tests.batch_builders import make_job
from tests.builders import make_pod

GANG = "default/tf-uid-tf"  # the gang of job tf (its PodGroup: <name>-<uid>)


def tf_job(phase: str = "Pending") -> Job:
    job = make_job("tf").task("ps", 1, cpu="2").task("worker", 2, cpu="1")
    return job.status(phase=phase).model()


def names(state: ClusterState) -> list[str]:
    return [pod.metadata.name for pod in state.gang_pods(GANG)]


@pytest.mark.parametrize(
    ("job", "wanted"),
    [
        (tf_job(), True),
        (tf_job(phase=""), True),
        (tf_job(phase="Running"), False),
        (tf_job(phase="Restarting"), False),
        (tf_job(phase="Completed"), False),
        (make_job("tf").task("a", 1).task("b", 1, depends_on=["a"]).model(), False),
        (
            tf_job().model_copy(
                update={
                    "metadata": tf_job().metadata.model_copy(
                        update={"deletion_timestamp": "2026-01-01T00:00:00Z"}
                    )
                }
            ),
            False,
        ),
    ],
    ids=["pending", "new", "running", "restarting", "completed", "depends-on", "deleting"],
)
def test_which_jobs_expect_their_pods(job: Job, wanted: bool) -> None:
    assert expecting(job) is wanted


def test_a_pending_jobs_gang_shows_every_replica_held_by_lahar_until_created() -> None:
    state = ClusterState()
    state.upsert_priority_class(
        PriorityClass.model_validate({"metadata": {"name": "high"}, "value": 1000})
    )
    changed: list[str] = []
    state.events.subscribe(GangChanged, lambda event: changed.append(event.key))
    job = make_job("tf").priority_class("high").task("ps", 1, cpu="2").task("worker", 2)
    state.upsert_job(job.status(phase="Pending").model())
    assert names(state) == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    assert changed == [GANG]
    pods = state.gang_pods(GANG)
    assert all(held_by_lahar(pod) and is_expected(pod.metadata.uid) for pod in pods)
    assert [pod.spec.priority for pod in pods] == [1000] * 3
    assert [pod.request["cpu"] for pod in pods] == [2000, 1000, 1000]
    assert pods[0].metadata.uid == expected_uid("tf-ps-0")
    assert not state.pods  # (none of them is a pod of the cluster)

    created = make_pod("tf-worker-0").uid("real-w0").cpu("1").group("tf-uid-tf")
    state.upsert_pod(created.model())
    assert names(state) == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    worker = next(p for p in state.gang_pods(GANG) if p.metadata.name == "tf-worker-0")
    assert worker.metadata.uid == "real-w0"  # the pod created takes its name's place


def test_a_status_write_builds_nothing_again_and_running_drops_them() -> None:
    state = ClusterState()
    changed: list[str] = []
    state.events.subscribe(GangChanged, lambda event: changed.append(event.key))
    state.upsert_job(tf_job())
    first = state.gang_pods(GANG)
    state.upsert_job(
        make_job("tf")
        .task("ps", 1, cpu="2")
        .task("worker", 2, cpu="1")
        .status(phase="Pending", pending=3)
        .model()
    )
    assert state.gang_pods(GANG)[0] is first[0]  # same spec, version and retries: kept
    assert changed == [GANG]
    state.upsert_job(tf_job(phase="Running"))
    assert names(state) == []
    assert changed == [GANG, GANG]
    state.upsert_job(tf_job())
    state.delete_job("default/tf")
    assert names(state) == []
    state.replace_jobs([tf_job()])
    assert len(names(state)) == 3
    state.replace_jobs([])
    assert names(state) == []


def test_expected_pods_wait_behind_lahars_gate_only() -> None:
    state = ClusterState()
    state.upsert_job(tf_job())
    gates = {gate.name for pod in state.gang_pods(GANG) for gate in pod.spec.scheduling_gates}
    assert gates == {GANG_GATE}
