"""The ProvisioningRequests a gang's scale-up needs: names, templates, pod sets and the plan."""

from __future__ import annotations

from typing import Any

import pytest

from extender.api.engine_settings import GangSettings, ScaleUpSettings
from extender.api.provisioning import (
    ATOMIC_CLASS,
    CONSUME_ANNOTATION,
    ProvisioningRequest,
)
from extender.api.scale_up import SCALE_UP_ANNOTATION
from extender.api.scheduling import GANG_GATE, GroupKind, PodGroup
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.gangs.members import view_gang
from extender.gangs.provisioning import (
    Create,
    plan,
    pod_sets,
    request_body,
    request_name,
    template_body,
)
from extender.gangs.scale_up import Asked
from extender.gangs.wanting import admit_provisioned, want_nodes
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod, make_queue

KEY = "default/big"


def member(index: int, *, task: str = "worker", cpu: str = "4") -> PodBuilder:
    pod = make_pod(f"big-{index}").uid(f"big-{index}").cpu(cpu).group("big").task(task)
    return pod.scheduler("lahar").gated(GANG_GATE)


def group(name: str = "big", kind: GroupKind = GroupKind.VOLCANO) -> PodGroup:
    built = make_group(name).min_member(8).queue("q").model()
    meta = built.metadata.model_copy(update={"uid": f"uid-{name}"})
    return built.model_copy(update={"group_kind": kind, "metadata": meta})


def waiting(mode: str = "provisioningRequest", capability: str | None = None) -> ClusterState:
    """Two 4-cpu nodes and gang big (8 x 4 cpu) in queue q of scale-up `mode`."""
    state = cluster([make_node(n).cpu("4") for n in ("n1", "n2")])
    queue = make_queue("q").annotate(SCALE_UP_ANNOTATION, mode)
    if capability is not None:
        queue = queue.capability(cpu=capability)
    state.upsert_queue(queue.model())
    state.upsert_pod_group(group())
    for index in range(8):
        state.upsert_pod(member(index).model())
    return state


def request(attempt: int = 1, phase: str | None = None, message: str = "") -> ProvisioningRequest:
    body: dict[str, Any] = request_body(group(), f"big-{attempt}", attempt, [("big-1-p0", 8)])
    body["metadata"]["uid"] = f"r{attempt}"
    if phase is not None:
        body["status"] = {
            "conditions": [{"type": phase, "status": "True", "reason": "R", "message": message}]
        }
    return ProvisioningRequest.model_validate(body)


def ledger(state: ClusterState) -> Gangs:
    gangs = Gangs(GangSettings(scale_up=ScaleUpSettings(retry=60)), schedulers={"lahar"})
    assert want_nodes(gangs, state, state.view().nodes) == [KEY]
    return gangs


def test_a_gang_that_wants_nodes_gets_one_request() -> None:
    state = waiting()
    gangs = ledger(state)
    done = plan(state, gangs, gangs.scale_ups, {}, now=0.0)
    assert done.create == [Create(KEY, "big-1", 1)]
    assert done.delete == [] and done.admit == []


def test_a_request_standing_is_not_made_again_and_its_members_consume_it() -> None:
    """As after a restart: the cache lists the request made before."""
    state = waiting()
    gangs = ledger(state)
    made = request(1, "Accepted")
    done = plan(state, gangs, gangs.scale_ups, {made.key: made}, now=10.0)
    assert done.create == [] and done.delete == []
    assert sorted(done.annotate) == sorted(("default", f"big-{i}", "big-1") for i in range(8))
    assert gangs.scale_ups.describe(KEY, now=50.0) == (
        "waiting for nodes: ProvisioningRequest default/big-1 Accepted, not Provisioned, for 40 s"
    )


def test_a_provisioned_request_admits_its_gang() -> None:
    state = waiting()
    gangs = ledger(state)
    made = request(1, "Provisioned")
    assert plan(state, gangs, gangs.scale_ups, {made.key: made}, now=0.0).admit == [KEY]


def test_an_ended_request_is_asked_again_after_the_backoff() -> None:
    state = waiting()
    gangs = ledger(state)
    failed = request(1, "Failed", "max size reached")
    first = plan(state, gangs, gangs.scale_ups, {failed.key: failed}, now=0.0)
    assert first.create == [] and first.delete == []
    assert "Failed (R: max size reached); asking again in 60 s" in str(
        gangs.scale_ups.describe(KEY, now=0.0)
    )
    later = plan(state, gangs, gangs.scale_ups, {failed.key: failed}, now=61.0)
    assert [d.request.key for d in later.delete] == ["default/big-1"]
    assert later.create == [Create(KEY, "big-2", 2)]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("stands", "its gang runs"),
        ("gone", "its gang is gone"),
        ("capped", "its gang waits for another reason now (QueueCapability)"),
    ],
)
def test_a_request_goes_when_its_gang_wants_no_nodes(change: str, why: str) -> None:
    state = waiting()
    gangs = ledger(state)
    made = request(1, "Accepted")
    if change == "stands":
        for index in range(8):
            node = "n1" if index < 4 else "n2"
            state.upsert_pod(member(index, cpu="1").on(node).phase("Running").model())
    elif change == "gone":
        state.delete_pod_group(KEY)
        for index in range(8):
            state.delete_pod(f"big-{index}")
    else:
        for index in range(8):  # (they consume the request)
            state.upsert_pod(member(index).annotate(CONSUME_ANNOTATION, "big-1").model())
        state.upsert_queue(
            make_queue("q")
            .annotate(SCALE_UP_ANNOTATION, "provisioningRequest")
            .capability(cpu="8")
            .model()
        )
        gangs.let_in(state, state.view().nodes)  # (the walk refuses it for its queue now)
    done = plan(state, gangs, gangs.scale_ups, {made.key: made}, now=0.0)
    assert [(d.request.key, d.why) for d in done.delete] == [("default/big-1", why)]
    assert done.create == []
    if change == "capped":  # its pods are the autoscaler's to see again
        assert {request for _, _, request in done.annotate} == {None}


def test_a_gang_in_a_queue_of_another_mode_asks_nothing() -> None:
    state = waiting("unschedulable")
    gangs = ledger(state)
    assert plan(state, gangs, gangs.scale_ups, {}, now=0.0).create == []


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("tf", GroupKind.VOLCANO, "tf-3"),
        ("tf", GroupKind.COSCHEDULING, "tf-coscheduling-3"),
        ("tf", GroupKind.NATIVE, "tf-native-3"),
    ],
)
def test_requests_are_named_after_their_group_and_attempt(
    name: str, kind: GroupKind, expected: str
) -> None:
    assert request_name(group(name, kind), 3) == expected


def test_a_long_name_is_cut_and_stays_unique() -> None:
    one, two = (request_name(group("x" * 250 + tail), 1) for tail in ("a", "b"))
    assert len(one) <= 253 and len(two) <= 253 and one != two


def test_members_of_one_task_and_shape_make_one_pod_set() -> None:
    state = waiting()
    state.upsert_pod(member(8, task="ps", cpu="1").model())
    state.upsert_pod(member(9, task="ps", cpu="1").model())
    group = group_of_ten = make_group("big").min_member(10).queue("q").model()
    state.upsert_pod_group(group_of_ten)
    sets = pod_sets(view_gang(state, KEY))
    assert [(pod.metadata.name, count) for pod, count in sets] == [("big-0", 8), ("big-8", 2)]
    # A request asks for what the gang needs at once, minMember; the rest go pod by pod.
    state.upsert_pod_group(
        group.model_copy(update={"spec": group.spec.model_copy(update={"min_member": 6})})
    )
    sets = pod_sets(view_gang(state, KEY))
    assert [(pod.metadata.name, count) for pod, count in sets] == [("big-0", 6)]


def test_a_template_is_the_member_less_where_it_was_placed_and_its_gate() -> None:
    pod = member(0).build()
    pod["spec"]["nodeName"] = "n1"
    body = template_body(group(), "big-1-p0", pod, "big-1")
    spec = body["template"]["spec"]
    assert "nodeName" not in spec and "schedulingGates" not in spec
    assert spec["containers"] == pod["spec"]["containers"]
    annotations = body["template"]["metadata"]["annotations"]
    assert annotations[CONSUME_ANNOTATION] == "big-1"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-big"
    made = request_body(group(), "big-1", 1, [("big-1-p0", 8)])
    assert made["spec"]["provisioningClassName"] == ATOMIC_CLASS
    assert made["spec"]["podSets"] == [{"podTemplateRef": {"name": "big-1-p0"}, "count": 8}]


def test_a_gang_its_queue_refuses_since_in_a_full_cluster_gives_its_request_up() -> None:
    """Past the point where nothing fits, the walk's refusal is read anew: the queue's."""
    state = waiting()
    for node in ("n1", "n2"):  # (the cluster full: the walk gives runs of refusals)
        filler = make_pod(f"fill-{node}").uid(f"fill-{node}").cpu("4").on(node)
        state.upsert_pod(filler.phase("Running").model())
    gangs = ledger(state)
    made = request(1, "Accepted")
    for index in range(8):
        state.upsert_pod(member(index).annotate(CONSUME_ANNOTATION, "big-1").model())
    capped = (
        make_queue("q").annotate(SCALE_UP_ANNOTATION, "provisioningRequest").capability(cpu="16")
    )
    state.upsert_queue(capped.model())
    assert want_nodes(gangs, state, state.view().nodes) == []
    done = plan(state, gangs, gangs.scale_ups, {made.key: made}, now=0.0)
    assert [d.request.key for d in done.delete] == ["default/big-1"]
    assert sorted(done.annotate) == sorted(("default", f"big-{i}", None) for i in range(8))
    # ... and is not admitted ahead of the fair order onto capacity bought before.
    gangs.scale_ups.seen(KEY, Asked("default", "big-1", 1, "Provisioned", 0.0), 0.0)
    for index in range(3, 10):
        state.upsert_node(make_node(f"n{index}").cpu("4").model())
    assert admit_provisioned(gangs, state, state.view().nodes) == []


def test_annotations_lahar_did_not_write_are_left_alone() -> None:
    state = waiting()
    gangs = ledger(state)
    state.upsert_pod(member(0).annotate(CONSUME_ANNOTATION, "someone-elses").model())
    state.upsert_pod(member(1).annotate(CONSUME_ANNOTATION, "big-3").model())
    done = plan(state, gangs, gangs.scale_ups, {}, now=0.0)
    assert done.annotate == [("default", "big-1", None)]  # (Lahar's name for this gang)


def test_the_book_forgets_a_gang_that_wants_no_nodes() -> None:
    state = waiting()
    gangs = ledger(state)
    gangs.scale_ups.not_asked(KEY, "this cluster does not serve them")
    state.upsert_queue(make_queue("q").model())  # (its mode none now)
    plan(state, gangs, gangs.scale_ups, {}, now=0.0)
    assert gangs.scale_ups.known() == []


def test_the_members_of_a_gang_admitted_keep_the_request_they_consume() -> None:
    """Cluster Autoscaler may end the booking (all of them scheduled) before Lahar's cache sees
    the last of them bound: the request goes, the names stay on the way to the nodes."""
    state = waiting()
    for index in range(8):
        state.upsert_pod(member(index).annotate(CONSUME_ANNOTATION, "big-1").model())
    for index in range(3, 10):
        state.upsert_node(make_node(f"n{index}").cpu("4").model())
    gangs = Gangs(GangSettings(scale_up=ScaleUpSettings(retry=60)), schedulers={"lahar"})
    assert gangs.let_in(state, state.view().nodes) == [KEY]  # (admitted)
    ended = request(1, "BookingExpired", "Capacity booking consumed: all pods scheduled")
    done = plan(state, gangs, gangs.scale_ups, {ended.key: ended}, now=0.0)
    assert [d.request.key for d in done.delete] == ["default/big-1"]
    assert done.annotate == []
