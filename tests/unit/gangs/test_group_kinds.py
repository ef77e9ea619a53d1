"""Every kind of PodGroup is a gang of the one engine: Volcano's, Coscheduling's and the native
one are admitted whole, refused with the same reasons, and told apart by their keys."""

from __future__ import annotations

import pytest

from extender.api.coscheduling import CoschedulingPodGroup
from extender.api.native_groups import NativePodGroup
from extender.api.scheduling import GroupKind, gang_key, naming_conflict
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, FilterOutcome
from extender.framework.policy import build_policy
from extender.gangs.members import view_gang
from extender.gangs.refusals import Cause
from extender.plugins import REGISTRY
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod
from tests.paths import set_path

POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": "binpack"}]}],
}
NODES = ["n1", "n2"]
KINDS = list(GroupKind)


def member(group: str, index: int, kind: GroupKind, cpu: str = "2") -> PodBuilder:
    return make_pod(f"{group}-{index}").uid(f"{group}-{index}").cpu(cpu).group(group, kind)


def filter_pod(engine: Engine, state: ClusterState, pod: PodBuilder) -> FilterOutcome:
    return engine.filter(state, state.pods[pod.model().metadata.uid], NODES, fit=True)


@pytest.fixture
def engine() -> Engine:
    return Engine(build_policy(POLICY, REGISTRY))


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        (GroupKind.VOLCANO, "ml/tf"),
        (GroupKind.COSCHEDULING, "ml/podgroups.scheduling.x-k8s.io/tf"),
        (GroupKind.NATIVE, "ml/podgroups.scheduling.k8s.io/tf"),
    ],
)
def test_a_pod_and_its_group_share_one_key_per_kind(kind: GroupKind, key: str) -> None:
    pod = make_pod("tf-0").ns("ml").group("tf", kind).model()
    group = make_group("tf").ns("ml").min_member(2).model(kind)
    assert gang_key(pod) == group.key == key
    assert group.group_kind is kind and group.spec.min_member == 2


@pytest.mark.parametrize("kind", KINDS)
def test_one_gang_of_each_kind_is_admitted_whole_and_the_next_waits(
    engine: Engine, kind: GroupKind
) -> None:
    a = [member("a", i, kind) for i in range(4)]
    b = [member("b", i, kind) for i in range(4)]
    state = cluster([make_node(n).cpu("4") for n in NODES], [*a, *b])
    state.upsert_pod_group(make_group("a").min_member(4).model(kind))
    state.upsert_pod_group(make_group("b").min_member(4).model(kind))

    assert sorted(filter_pod(engine, state, a[0]).passed) == NODES
    assert engine.gang_rules
    assert set(engine.admitted()) == {make_group("a").model(kind).key}
    assert filter_pod(engine, state, b[0]).passed == []


def test_groups_of_three_kinds_with_one_name_are_three_gangs(engine: Engine) -> None:
    pods = [member(f"{kind.name}", 0, kind) for kind in KINDS]
    state = cluster([make_node("n1").cpu("8")], pods)
    for kind in KINDS:
        state.upsert_pod_group(make_group(kind.name).min_member(1).model(kind))
    keys = {gang_key(state.pods[pod.model().metadata.uid]) for pod in pods}
    assert len(keys) == 3 and keys <= set(state.pod_groups)
    state.replace_pod_groups([], GroupKind.COSCHEDULING)  # a relist of one kind only
    assert {group.group_kind for group in state.pod_groups.values()} == {
        GroupKind.VOLCANO,
        GroupKind.NATIVE,
    }


@pytest.mark.parametrize(
    ("kind", "path", "value", "expected"),
    [
        (
            GroupKind.COSCHEDULING,
            "spec.minMember",
            0,
            "gang default/podgroups.scheduling.x-k8s.io/g: spec.minMember is 0: it must be at "
            "least 1; its pods wait until the PodGroup is fixed",
        ),
        (
            GroupKind.NATIVE,
            "spec.schedulingPolicy.gang.minCount",
            0,
            "gang default/podgroups.scheduling.k8s.io/g: spec.schedulingPolicy.gang.minCount is "
            "0: it must be at least 1; its pods wait until the PodGroup is fixed",
        ),
        (
            GroupKind.NATIVE,
            "spec.schedulingPolicy",
            {},
            "gang default/podgroups.scheduling.k8s.io/g: spec.schedulingPolicy: neither gang nor "
            "basic is set; its pods wait until the PodGroup is fixed",
        ),
    ],
    ids=["cosched-min-member-0", "native-min-count-0", "native-no-policy"],
)
def test_a_malformed_group_keeps_its_pods_waiting_and_says_why(
    engine: Engine, kind: GroupKind, path: str, value: object, expected: str
) -> None:
    body = make_group("g").min_member(2).kind_object(kind)
    set_path(body, path, value)
    model = CoschedulingPodGroup if kind is GroupKind.COSCHEDULING else NativePodGroup
    pods = [member("g", i, kind, cpu="1") for i in range(2)]
    state = cluster([make_node(n).cpu("4") for n in NODES], pods)
    state.upsert_pod_group(model.model_validate(body).as_gang())
    outcome = filter_pod(engine, state, pods[0])
    assert outcome.passed == []
    assert set(outcome.failed.values()) == {expected}
    assert engine.gang_rules
    key = gang_key(state.pods["g-0"])
    assert key is not None and view_gang(state, key).group is not None
    refusal = engine.refusal(key)
    assert refusal is not None and refusal.rejection.cause == Cause.INVALID_GROUP


def test_a_native_basic_group_is_a_gang_of_one() -> None:
    body = make_group("g").kind_object(GroupKind.NATIVE)
    body["spec"]["schedulingPolicy"] = {"basic": {}}
    group = NativePodGroup.model_validate(body).as_gang()
    assert group.spec.min_member == 1 and not group.problem


def test_a_pod_naming_two_groups_is_refused_with_both_fields(engine: Engine) -> None:
    pod = member("a", 0, GroupKind.VOLCANO).group("b", GroupKind.COSCHEDULING)
    state = cluster([make_node(n).cpu("4") for n in NODES], [pod])
    state.upsert_pod_group(make_group("a").model())
    message = (
        "pod default/a-0: metadata.annotations[scheduling.k8s.io/group-name] names 'a', "
        "metadata.labels[scheduling.x-k8s.io/pod-group] names 'b'; a pod belongs to one group"
    )
    assert naming_conflict(state.pods["a-0"]) == message
    outcome = filter_pod(engine, state, pod)
    assert outcome.passed == [] and set(outcome.failed.values()) == {f"gang default/a: {message}"}


def test_a_coscheduling_group_reads_queue_resources_timeout_and_phase() -> None:
    body = (
        make_group("g")
        .min_member(3)
        .queue("ml")
        .min_resources(cpu="6")
        .kind_object(GroupKind.COSCHEDULING)
    )
    body["spec"]["scheduleTimeoutSeconds"] = 20
    body["status"] = {"phase": "Scheduling", "running": 1}
    group = CoschedulingPodGroup.model_validate(body).as_gang()
    assert group.queue == "ml" and group.spec.min_member == 3
    assert (
        group.spec.min_resources
        == make_group("x").min_resources(cpu="6").model().spec.min_resources
    )
    assert group.gather_timeout == 20
    # (Scheduling says minMember pods exist, admitted or not: queue counts read it as Pending)
    assert group.status.phase == "Pending" and group.status.running == 1


def test_a_native_gangs_pods_must_share_its_priority(engine: Engine) -> None:
    kind = GroupKind.NATIVE
    pods = [member("g", i, kind, cpu="1").priority_class("low").priority(10) for i in range(2)]
    state = cluster([make_node(n).cpu("4") for n in NODES], pods)
    state.upsert_pod_group(make_group("g").min_member(2).model(kind))
    outcome = filter_pod(engine, state, pods[0])
    assert outcome.passed == []
    assert set(outcome.failed.values()) == {
        "gang default/podgroups.scheduling.k8s.io/g: pod default/g-0 has priority 10 (class "
        "low) but its PodGroup has class (none): kube-scheduler places a native PodGroup's pods "
        "only when they share its priority"
    }
    group = make_group("g").min_member(2).set("spec.priorityClassName", "low")
    state.upsert_pod_group(group.model(kind))  # (the class's name alone: names agree)
    assert sorted(filter_pod(engine, state, pods[0]).passed) == NODES
    body = group.kind_object(kind)
    body["spec"]["priority"] = 1000  # the value the API server set: kube-scheduler compares it
    state.upsert_pod_group(NativePodGroup.model_validate(body).as_gang())
    said = view_gang(state, GroupKind.NATIVE.key("default", "g")).conflict
    assert (
        said is not None
        and "has priority 10 (class low) but its PodGroup has priority 1000" in said
    )
