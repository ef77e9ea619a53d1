"""Gang admission: all or nothing at filter time, reservations kept, the same plan reused."""

from __future__ import annotations

from typing import Any

import pytest

from extender.api.scheduling import GANG_GATE, PodGroup, Queue
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, FilterOutcome
from extender.framework.policy import build_policy
from extender.gangs import placement as placement_module
from extender.gangs.events import GangRejected
from extender.gangs.ledger import Gangs
from extender.gangs.members import view_gang
from extender.gangs.refusals import Cause
from extender.plugins import REGISTRY
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod, make_queue

POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": "binpack"}]}],
}
NODES = ["n1", "n2"]


def member(group: str, index: int, cpu: str = "2", task: str = "") -> PodBuilder:
    pod = make_pod(f"{group}-{index}").uid(f"{group}-{index}").cpu(cpu).group(group)
    return pod.task(task) if task else pod


def two_node_cluster(*pods: PodBuilder, cpu: str = "4") -> ClusterState:
    return cluster([make_node(n).cpu(cpu) for n in NODES], list(pods))


def filter_pod(engine: Engine, state: ClusterState, pod: PodBuilder) -> FilterOutcome:
    """Through the engine's door: the gang rules' verdict (admitting), then the policy's fit."""
    model = state.pods[pod.model().metadata.uid]
    return engine.filter(state, model, NODES, fit=True)


@pytest.fixture
def engine() -> Engine:
    return Engine(build_policy(POLICY, REGISTRY))


def test_one_gang_is_admitted_whole_and_the_other_waits_with_nothing(engine: Engine) -> None:
    a = [member("a", i) for i in range(4)]
    b = [member("b", i) for i in range(4)]
    state = two_node_cluster(*a, *b)
    state.upsert_pod_group(make_group("a").min_member(4).model())
    state.upsert_pod_group(make_group("b").min_member(4).model())

    first = filter_pod(engine, state, a[0])
    assert set(engine.admitted()) == {"default/a"}
    slots = engine.admission("default/a").slots
    assert {slot.node for slot in slots.values()} == set(NODES)
    # Its own slot's node, and the other, where a slot of its gang asks the same: either will do.
    assert sorted(first.passed) == NODES

    rejected = filter_pod(engine, state, b[0])
    assert rejected.passed == []
    # b contended in the walk that admitted a (pending, though not asked about yet): its turn
    # there names the gang the capacity went to.
    assert rejected.failed == dict.fromkeys(
        NODES,
        "gang default/b: the capacity it needs goes first to gangs ahead of it in the fair "
        "order (queue share, priority, age): default/a",
    )
    plain = make_pod("plain").uid("plain").cpu("1")
    state.upsert_pod(plain.model())
    outcome = filter_pod(engine, state, plain)
    assert outcome.passed == []
    assert "free 4 of which 4 is reserved for admitted gangs" in outcome.failed["n1"]


@pytest.mark.parametrize(
    ("pods", "group", "expected"),
    [
        (
            [member("g", 0), member("g", 1)],
            make_group("g").min_member(4),
            "gang default/g: 2/4 pods of gang default/g exist",
        ),
        (
            [member("g", 0, task="ps"), member("g", 1, task="worker")],
            make_group("g").min_member(2).min_task("ps", 2),
            "gang default/g: task ps has 1 of the 2 pods it needs",
        ),
        (
            [member("g", 0), member("g", 1)],
            None,
            "gang default/g: PodGroup default/g does not exist; its pods wait until it is created",
        ),
        (
            [member("g", 0, cpu="1"), member("g", 1, cpu="1")],
            make_group("g").min_member(2).min_resources(cpu="12"),
            "gang default/g: minResources need cpu 12, 8 free on the nodes its pods may run on",
        ),
        (
            [member("g", 0, cpu="3"), member("g", 1, cpu="3"), member("g", 2, cpu="3")],
            make_group("g").min_member(3),
            "gang default/g: 1 of 3 members cannot be placed: Insufficient cpu",
        ),
    ],
    ids=["too-few-pods", "task-short", "no-podgroup", "min-resources", "does-not-fit"],
)
def test_a_gang_that_cannot_be_admitted_fails_everywhere_with_its_reason(
    engine: Engine, pods: list[PodBuilder], group: Any, expected: str
) -> None:
    state = two_node_cluster(*pods)
    if group is not None:
        state.upsert_pod_group(group.model())
    outcome = filter_pod(engine, state, pods[0])
    assert outcome.passed == []
    assert outcome.failed == dict.fromkeys(NODES, expected)


def test_min_resources_count_only_nodes_the_members_may_run_on(engine: Engine) -> None:
    pods = [member("g", i, cpu="1").node_selector("kubernetes.io/hostname", "n1") for i in (0, 1)]
    state = two_node_cluster(*pods)
    state.upsert_pod_group(make_group("g").min_member(2).min_resources(cpu="6").model())
    outcome = filter_pod(engine, state, pods[0])
    assert outcome.passed == []
    assert "minResources need cpu 6, 4 free on the nodes" in outcome.failed["n1"]


def test_min_resources_as_volcanos_controller_fills_them_are_read_as_volcanos_scheduler_does(
    engine: Engine,
) -> None:
    """Volcano's job controller fills minResources from the pods' quota usage; its scheduler
    reads only the resources (`count/*`, `requests.*`, `limits.*` are quota names)."""
    pods = [member("g", i, cpu="1") for i in (0, 1)]
    state = two_node_cluster(*pods)
    group = make_group("g").min_member(2)
    group.min_resources(
        count_pods="2", pods="2", cpu="2", requests_cpu="2", limits_memory="4Gi"
    )  # (builder names: `_` for `.`; `count_pods` is written below)
    body = group.build()
    body["spec"]["minResources"]["count/pods"] = body["spec"]["minResources"].pop("count.pods")
    model = PodGroup.model_validate(body)
    assert dict(model.spec.min_resources.quantities()) == {"cpu": "2", "pods": "2"}
    state.upsert_pod_group(model)
    outcome = filter_pod(engine, state, pods[0])
    assert outcome.passed  # admitted: nothing of the quota names is asked of the nodes


def test_members_in_one_cluster_state_share_one_plan(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    pods = [member("g", i, cpu="3") for i in range(3)]
    state = two_node_cluster(*pods)
    state.upsert_pod_group(make_group("g").min_member(3).model())
    calls = []
    real_place = placement_module.Room.place
    monkeypatch.setattr(
        placement_module.Room,
        "place",
        lambda room, *a, **k: calls.append(1) or real_place(room, *a, **k),
    )
    for pod in pods:
        assert filter_pod(engine, state, pod).passed == []
    assert len(calls) == 1
    state.upsert_node(make_node("n3").cpu("4").model())  # the cluster changed: plan again
    filter_pod(engine, state, pods[0])
    assert len(calls) == 2


def test_a_filter_call_walks_the_order_only_as_far_as_the_gang_asked_about(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gangs = {g: [member(g, i, cpu="1") for i in range(2)] for g in ("a", "b", "c", "d")}
    state = two_node_cluster(*(pod for pods in gangs.values() for pod in pods), cpu="8")
    for name in gangs:
        state.upsert_pod_group(make_group(name).min_member(2).model())
    planned: list[str] = []
    real_place = placement_module.Room.place
    monkeypatch.setattr(
        placement_module.Room,
        "place",
        lambda room, pods, **k: (
            planned.append(pods[0].metadata.name[0]) or real_place(room, pods, **k)
        ),
    )
    # Serving their scheduler from the start: b, c and d contend before they are asked about.
    engine = Engine(build_policy(POLICY, REGISTRY), {"default-scheduler"})
    filter_pod(engine, state, gangs["a"][0])
    assert planned == ["a"]  # the first in the order: the turns after it cannot change it
    walked = engine.order(state)  # a whole walk takes every turn
    assert planned == ["a", "b", "c", "d"]
    assert all(walked.turns[f"default/{g}"].slots for g in "bcd")


def test_slots_turn_into_usage_and_a_standing_gang_is_plain_again(engine: Engine) -> None:
    pods = [member("g", i) for i in range(3)]
    state = two_node_cluster(*pods)
    state.upsert_pod_group(make_group("g").min_member(2).model())
    filter_pod(engine, state, pods[0])
    admission = engine.admission("default/g")
    assert len(admission.slots) == 2
    for pod in pods[:2]:
        slot = admission.slots[pod.model().metadata.uid]
        engine.consume(pod.model().metadata.uid)
        state.assume(state.pods[pod.model().metadata.uid], slot.node)
    assert engine.reserved() == {}
    extra = filter_pod(engine, state, pods[2])  # beyond minMember: fits like any pod
    assert extra.passed == ["n2"]  # binpack put both members on n1, which is now full
    assert "default/g" not in engine.admitted()


def admitted_pair(now: list[float]) -> tuple[Engine, ClusterState, list[PodBuilder]]:
    """A gang of two, admitted by filtering its first member, by an engine reading a clock the
    test moves."""
    engine = Engine(build_policy(POLICY, REGISTRY), clock=lambda: now[0])
    pods = [member("g", i) for i in range(2)]
    state = two_node_cluster(*pods)
    state.upsert_pod_group(make_group("g").min_member(2).model())
    filter_pod(engine, state, pods[0])
    return engine, state, pods


def test_a_released_gang_backs_off() -> None:
    now = [100.0]
    engine, state, pods = admitted_pair(now)
    engine.release("default/g", back_off=True)
    outcome = filter_pod(engine, state, pods[0])
    assert outcome.failed["n1"].startswith("gang default/g: backing off 10s")
    now[0] += 11
    assert filter_pod(engine, state, pods[0]).failed == {}


def test_a_gang_whose_slots_are_all_consumed_is_done_not_expired() -> None:
    now = [0.0]
    engine, _, _ = admitted_pair(now)
    for uid in ("g-0", "g-1"):
        engine.consume(uid)
    assert not engine.admitted()
    now[0] += 3600
    assert engine.expire() == []
    assert engine.backoff_ends("default/g") is None


def test_min_task_member_is_part_of_standing() -> None:
    state = two_node_cluster(
        member("g", 0, task="ps"), member("g", 1, task="w"), member("g", 2, task="w")
    )
    state.upsert_pod_group(make_group("g").min_member(2).min_task("ps", 1).model())
    for uid in ("g-1", "g-2"):  # two workers placed: minMember reached, but no ps
        state.assume(state.pods[uid], "n1")
    gang = view_gang(state, "default/g")
    assert gang.ready == 2
    assert not gang.stands
    state.assume(state.pods["g-0"], "n2")
    assert view_gang(state, "default/g").stands


def test_place_names_nodes_the_member_may_not_run_on() -> None:
    state = two_node_cluster(member("g", 0).node_selector("zone", "nowhere"))
    state.upsert_pod_group(make_group("g").min_member(1).model())
    engine = Engine(build_policy(POLICY, REGISTRY))
    outcome = filter_pod(engine, state, member("g", 0))
    assert outcome.failed["n1"] == (
        "gang default/g: 1 of 1 members cannot be placed: "
        "no node matches its nodeSelector, node affinity and tolerations"
    )


def test_plans_respect_required_node_affinity() -> None:
    """Members pinned by node affinity to n2 are planned there, not on the fuller n1."""
    pods = [member("g", i, cpu="1").requires("kubernetes.io/hostname", "In", "n2") for i in (0, 1)]
    state = two_node_cluster(*pods, make_pod("filler").cpu("2").on("n1"))
    state.upsert_pod_group(make_group("g").min_member(2).model())
    engine = Engine(build_policy(POLICY, REGISTRY))
    filter_pod(engine, state, pods[0])
    slots = engine.admission("default/g").slots.values()
    assert {slot.node for slot in slots} == {"n2"}


def test_a_refused_gang_whose_queue_is_deleted_is_refused_for_the_queue_at_the_next_pass(
    engine: Engine,
) -> None:
    """Nobody asks about a parked gang until the scheduler retries it: the waker's pass
    (`admissible`) remembers the new reason, so its PodGroup says why it waits now."""
    pods = [member("g", i, cpu="5").parked() for i in range(2)]
    state = two_node_cluster(*pods)
    state.upsert_queue(Queue.model_validate(make_queue("q1").build()))
    state.upsert_pod_group(make_group("g").min_member(2).queue("q1").model())
    filter_pod(engine, state, pods[0])
    refused = engine.refusal("default/g")
    assert refused is not None and refused.rejection.cause == Cause.NOT_ENOUGH_RESOURCES
    told: list[Cause] = []
    engine.events.subscribe(GangRejected, lambda event: told.append(event.rejection.cause))

    state.delete_queue("q1")
    assert engine.admissible(state) == []
    refused = engine.refusal("default/g")
    assert refused is not None
    assert refused.rejection.message == (
        "gang default/g: queue q1 does not exist; it waits until it is created"
    )
    assert told == [Cause.NO_QUEUE]
    assert engine.admissible(state) == []
    assert told == [Cause.NO_QUEUE]  # told once, not at every pass


def test_a_gang_admitted_before_its_queue_is_deleted_binds_whole(engine: Engine) -> None:
    pods = [member("g", i) for i in range(2)]
    state = two_node_cluster(*pods)
    state.upsert_queue(Queue.model_validate(make_queue("q1").build()))
    state.upsert_pod_group(make_group("g").min_member(2).queue("q1").model())
    assert filter_pod(engine, state, pods[0]).passed
    state.delete_queue("q1")
    assert filter_pod(engine, state, pods[1]).passed  # its slot holds: no partial gang


def test_a_gang_whose_members_are_being_evicted_no_longer_stands_on_them() -> None:
    """Its replacements (a Volcano Job makes them at once) wait their turn in the fair order
    instead of binding as a standing gang's extra members into the capacity its eviction frees
    for another gang."""
    state = cluster([make_node("n1").cpu("4")])
    state.upsert_pod_group(make_group("old").min_member(2).model())
    for index in range(2):
        evicted = make_pod(f"old-{index}").uid(f"old-{index}").cpu("2").group("old")
        state.upsert_pod(evicted.on("n1").phase("Running").deleting().model())
        again = make_pod(f"old-{index}-again").uid(f"old-{index}-again").cpu("2").group("old")
        state.upsert_pod(again.scheduler("lahar").gated(GANG_GATE).model())
    gang = view_gang(state, "default/old")
    assert (len(gang.placed), gang.ready, gang.stands) == (2, 0, False)
    gangs = Gangs(schedulers={"lahar"})
    assert gangs.let_in(state, state.view().nodes) == []  # (the evicted pods still hold n1)
    for index in range(2):
        state.delete_pod(f"old-{index}")
    assert gangs.let_in(state, state.view().nodes) == ["default/old"]  # its turn, admitted
