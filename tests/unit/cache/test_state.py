"""The cluster state counts what the scheduler counts: bound, unfinished pods at their effective
request; assumed pods at once and exactly once; nothing left behind by deletes or relists; a pod
Lahar evicts going at once."""

from __future__ import annotations

from extender.api.resources import Resources
from extender.cache.events import GangChanged, PodGroupChanged
from extender.cache.state import ClusterState
from extender.gangs.members import view_gang
from tests.builders import cluster, make_group, make_node, make_pod


def requested(state: ClusterState, node: str) -> Resources:
    return state.snapshot().nodes[node].requested


def test_bound_pods_count_and_finished_ones_do_not() -> None:
    state = cluster(
        [make_node("n1").cpu("4")],
        [
            make_pod("a").cpu("1").on("n1"),
            make_pod("b").cpu("2").on("n1").phase("Succeeded"),
            make_pod("pending").cpu("3"),
        ],
    )
    assert requested(state, "n1") == Resources({"cpu": 1000, "pods": 1})
    assert state.snapshot().nodes["n1"].free["cpu"] == 3000


def test_a_pod_finishing_frees_its_request() -> None:
    pod = make_pod("a").cpu("1").on("n1").uid("a")
    state = cluster([make_node("n1")], [pod])
    state.upsert_pod(pod.phase("Failed").model())
    assert requested(state, "n1") == Resources()


def test_pods_seen_before_their_node_count_when_it_arrives() -> None:
    state = cluster([], [make_pod("a").cpu("1").on("n1")])
    state.upsert_node(make_node("n1").model())
    assert requested(state, "n1")["cpu"] == 1000


def test_an_assumed_pod_counts_once_through_confirmation() -> None:
    pod = make_pod("a").cpu("2").uid("a")
    state = cluster([make_node("n1")], [pod])
    state.assume(pod.model(), "n1")
    assert requested(state, "n1")["cpu"] == 2000
    assert state.is_assumed("a")

    state.upsert_pod(pod.model())  # a stale event from before the binding
    assert requested(state, "n1")["cpu"] == 2000

    state.upsert_pod(pod.on("n1").model())  # the watch shows the binding
    assert requested(state, "n1")["cpu"] == 2000
    assert not state.is_assumed("a")
    state.assume(pod.model(), "n1")  # a retried bind of a pod already bound: still once
    assert requested(state, "n1")["cpu"] == 2000


def test_a_bind_that_completes_after_the_pod_was_deleted_brings_nothing_back() -> None:
    """The watch shows the pod deleted before Lahar's (slow, retried) bind call returns: the pod
    stays gone, holding nothing; no later event would ever remove it."""
    pod = make_pod("a").cpu("2").uid("a")
    state = cluster([make_node("n1")], [pod])
    state.delete_pod("a")
    state.assume(pod.model(), "n1")
    assert "a" not in state.pods
    assert state.sizes()["pods"] == 0
    assert requested(state, "n1")["cpu"] == 0
    assert not state.is_assumed("a")


def test_forget_and_expiry_release_assumed_pods() -> None:
    now = [100.0]
    state = ClusterState(assume_ttl=30, clock=lambda: now[0])
    state.upsert_node(make_node("n1").model())
    a, b = make_pod("a").cpu("1").uid("a").model(), make_pod("b").cpu("1").uid("b").model()
    state.assume(a, "n1")
    state.assume(b, "n1")
    state.forget("a")
    assert requested(state, "n1")["cpu"] == 1000
    now[0] = 129.0
    assert state.expire_assumed() == []
    now[0] = 131.0
    assert state.expire_assumed() == ["b"]
    assert requested(state, "n1") == Resources()


def test_relists_drop_what_is_gone() -> None:
    keep, gone = make_pod("keep").cpu("1").on("n1"), make_pod("gone").cpu("1").on("n1")
    state = cluster([make_node("n1"), make_node("n2")], [keep, gone])
    state.replace_pods([keep.model()])
    state.replace_nodes([make_node("n1").model()])
    assert set(state.snapshot().nodes) == {"n1"}
    assert requested(state, "n1")["cpu"] == 1000
    assert state.sizes() == {
        "nodes": 1,
        "pods": 1,
        "assumed_pods": 0,
        "priority_classes": 0,
        "pod_groups": 0,
        "queues": 0,
    }


def test_snapshots_are_shared_until_something_changes() -> None:
    state = cluster([make_node("n1"), make_node("n2")])
    first = state.snapshot()
    assert state.snapshot() is first
    state.upsert_pod(make_pod("a").cpu("1").on("n2").model())
    second = state.snapshot()
    assert second is not first
    assert first.nodes["n2"].requested == Resources()  # the old snapshot did not change
    assert second.changed_since(first.generation) == {"n2"}
    assert second.changed_since(second.generation) == set()


def test_changes_policies_do_not_read_cost_nothing() -> None:
    state = cluster([make_node("n1")])
    generation = state.generation
    state.upsert_node(make_node("n1").model())  # a heartbeat: same allocatable, labels, taints
    state.delete_node("never-seen")
    assert state.generation == generation
    pod = make_pod("a").cpu("1").model()
    state.assume(pod, "n1")
    assumed = state.generation
    bound = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": "n1"})})
    state.upsert_pod(bound)  # the watch confirms the binding: usage is unchanged
    assert state.generation == assumed
    assert not state.is_assumed(pod.metadata.uid)
    assert requested(state, "n1")["cpu"] == 1000


def test_pod_groups_are_announced_when_new_or_respecified_also_after_a_relist() -> None:
    state = ClusterState()
    announced: list[str] = []
    state.events.subscribe(PodGroupChanged, lambda event: announced.append(event.key))
    group = make_group("g").min_member(2).model()
    state.replace_pod_groups([group])
    versions = state.stamp.groups
    status_only = group.model_copy(
        update={"status": group.status.model_copy(update={"phase": "Inqueue"})}
    )
    state.upsert_pod_group(status_only)
    assert state.stamp.groups == versions
    state.upsert_pod_group(make_group("g").min_member(3).model())
    state.replace_pod_groups([])
    assert announced == ["default/g", "default/g"]
    assert state.pod_groups == {}


def test_gang_changes_are_announced_per_gang_and_only_when_they_matter() -> None:
    state = cluster([make_node("n1")], [])
    changed: list[str] = []
    state.events.subscribe(GangChanged, lambda event: changed.append(event.key))
    member = make_pod("g-0").group("g")
    state.upsert_pod(member.model())  # joined
    state.upsert_pod(member.label("x", "y").model())  # a label: not a gang change
    state.upsert_pod(member.on("n1").model())  # bound
    state.upsert_pod(member.on("n1").phase("Succeeded").model())  # finished
    state.upsert_pod(make_pod("loner").model())  # no gang
    state.delete_pod("uid-default-g-0")  # left
    assert changed == ["default/g"] * 4


def test_terminating_pods_are_known_until_they_are_gone_or_no_longer_terminating() -> None:
    pod = make_pod("a").cpu("1").on("n1").uid("a").model()
    state = cluster([make_node("n1")], [pod])
    assert state.terminating == set()
    meta = pod.metadata.model_copy(update={"deletion_timestamp": "2026-11-25T00:00:00Z"})
    state.upsert_pod(pod.model_copy(update={"metadata": meta}))
    assert state.terminating == {"a"}
    state.replace_pods([pod])  # a relist where it is not terminating (a stale event before)
    assert state.terminating == set()
    state.upsert_pod(pod.model_copy(update={"metadata": meta}))
    state.delete_pod("a")
    assert state.terminating == set()


def test_a_pod_the_scheduler_asks_about_first_is_learned_unless_the_watch_showed_it_gone() -> None:
    state = cluster([make_node("n1").cpu("4")], [])
    early = make_pod("w-0").uid("w0").cpu("1").group("g").model()
    state.learn(early)
    assert state.pods["w0"] is early
    assert [pod.metadata.uid for pod in state.gang_pods("default/g")] == ["w0"]
    newer = make_pod("w-0").uid("w0").cpu("1").group("g").on("n1").model()
    state.upsert_pod(newer)
    state.learn(early)  # (known: the watch's copy stays)
    assert state.pods["w0"] is newer
    state.delete_pod("w0")
    state.learn(early)  # (a stale copy of a pod the watch showed deleted brings nothing back)
    assert "w0" not in state.pods


def test_a_pod_lahar_evicts_is_going_until_the_watch_shows_it_so_or_the_eviction_fails() -> None:
    """Marked going at the eviction, its gang no longer stands on it: a stale event from before
    the eviction keeps the mark, the watch's own deletionTimestamp or deletion takes over; a
    failed eviction brings the pod back as the watch last showed it."""
    placed = [make_pod(f"g-{i}").uid(f"g{i}").cpu("1").group("g").on("n1") for i in range(2)]
    state = cluster([make_node("n1").cpu("4")], placed)
    state.upsert_pod_group(make_group("g").min_member(2).model())
    assert view_gang(state, "default/g").stands
    changed: list[str] = []
    state.events.subscribe(GangChanged, lambda event: changed.append(event.key))

    state.evicting("g0")
    assert state.terminating == {"g0"} and changed == ["default/g"]
    assert not view_gang(state, "default/g").stands
    assert requested(state, "n1") == Resources({"cpu": 2000, "pods": 2})  # (runs till gone)
    state.upsert_pod(placed[0].phase("Running").model())  # an event from before the eviction
    assert state.terminating == {"g0"} and not view_gang(state, "default/g").stands
    state.upsert_pod(placed[0].deleting().model())  # the watch shows it going
    state.delete_pod("g0")
    assert state.terminating == set() and "g0" not in state.pods

    state.evicting("g1")
    state.kept("g1")  # the eviction failed
    assert state.terminating == set()
    assert state.pods["g1"] == placed[1].model()
    state.kept("g1")  # (no mark: nothing to take back)
    state.evicting("gone")  # (a pod the state does not hold: nothing to mark)
    assert state.pods["g1"] == placed[1].model() and "gone" not in state.pods
