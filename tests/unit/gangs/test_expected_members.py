"""A Job's gang admitted before its pods exist: planned on the pods its controller will create,
its slots taken over by those pods by name, bound whole."""

from __future__ import annotations

from extender.api.job_pods import expected_uid
from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.framework.policy import build_policy
from extender.gangs.members import view_gang
from extender.plugins import REGISTRY
from tests.batch_builders import make_job
from tests.builders import cluster, make_group, make_node, make_pod

POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": "binpack"}]}],
}
NODES = ["n1", "n2"]
GROUP = "tf-uid-tf"  # job tf's PodGroup
GANG = f"default/{GROUP}"


def waiting_job(state: ClusterState, workers: int = 4, cpu: str = "2") -> None:
    job = make_job("tf").task("worker", workers, cpu=cpu).status(phase="Pending")
    state.upsert_job(job.model())
    state.upsert_pod_group(make_group(GROUP).min_member(workers).model())


def engine() -> Engine:
    return Engine(build_policy(POLICY, REGISTRY), {"volcano"})


def test_a_waiting_jobs_gang_is_let_in_on_its_expected_pods_and_they_take_its_slots() -> None:
    state = cluster([make_node(n).cpu("4") for n in NODES], [])
    waiting_job(state)
    door = engine()
    assert door.let_in(state) == [GANG]
    slots = door.admission(GANG).slots  # type: ignore[union-attr]
    assert set(slots) == {expected_uid(f"tf-worker-{i}") for i in range(4)}
    assert door.in_flight() == 4  # (counted against the bound like any let-in gang)

    # The controller creates the pods, ungated; each takes the slot of its name.
    for index in range(4):
        pod = make_pod(f"tf-worker-{index}").uid(f"w{index}").cpu("2").group(GROUP)
        state.upsert_pod(pod.scheduler("volcano").model())
    first = door.filter(state, state.pods["w0"], NODES, fit=True)
    assert sorted(first.passed) == NODES
    slots = door.admission(GANG).slots  # type: ignore[union-attr]
    assert set(slots) == {"w0", "w1", "w2", "w3"}
    assert door.in_flight() == 4


def test_a_gang_too_big_for_the_cluster_is_refused_before_any_pod_is_created() -> None:
    state = cluster([make_node(n).cpu("4") for n in NODES], [])
    waiting_job(state, workers=5)
    door = engine()
    assert door.let_in(state) == []
    refusal = door.refusal(GANG)
    assert refusal is not None and "gang default/tf-uid-tf" in refusal.rejection.message
    assert not state.pods
    assert len(view_gang(state, GANG).held) == 5
