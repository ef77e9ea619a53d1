"""The webhook's view of queues and of the PodGroups naming each, as the informers fill it."""

from __future__ import annotations

from collections.abc import Sequence

from extender.api.scheduling import GroupKind, PodGroupRef, Queue
from extender.webhook.store import (
    COSCHEDULING_GROUPS,
    NATIVE_GROUPS,
    AnnotatedGroupRef,
    WebhookStore,
)
from tests.builders import make_group, make_queue


def test_pod_groups_follow_their_queue_through_moves_and_deletes() -> None:
    store = WebhookStore()
    store.replace_queues([make_queue("a").model(), make_queue("b").state("Closed").model()])
    store.replace_groups([_ref("g1", "x", "a"), _ref("g2", "y", "a")])
    assert store.pod_groups_in("a") == ["x/g1", "y/g2"]
    store.upsert_group(_ref("g1", "x", "b"))  # moved
    assert store.pod_groups_in("a") == ["y/g2"] and store.pod_groups_in("b") == ["x/g1"]
    store.delete_group(_ref("g2", "y", "a"))
    assert store.pod_groups_in("a") == []
    queue = store.queue("b")
    assert queue is not None and not queue.open
    store.delete_queue(make_queue("b").model())
    assert store.queue("b") is None


def test_a_relist_replaces_everything() -> None:
    store = WebhookStore()
    store.upsert_group(_ref("old", "x", "a"))
    store.replace_groups([_ref("new", "x", "c")])
    assert store.pod_groups_in("a") == [] and store.pod_groups_in("c") == ["x/new"]


def test_a_pod_group_whose_other_fields_do_not_parse_still_counts_in_its_queue() -> None:
    body = make_group("odd").ns("x").queue("a").min_resources(cpu="lots").build()
    store = WebhookStore()
    store.upsert_group(PodGroupRef.model_validate(body))
    assert store.pod_groups_in("a") == ["x/odd"]


def _ref(name: str, namespace: str, queue: str) -> PodGroupRef:
    return PodGroupRef.model_validate(make_group(name).ns(namespace).queue(queue).build())


def test_a_queue_the_informer_has_not_delivered_yet_is_read_live() -> None:
    """Created a moment before a PodGroup naming it: the store asks the API server before a
    rule says it does not exist; what it read is not kept (the informer brings it)."""
    asked: list[str] = []
    live = {"new": make_queue("new").model()}

    def fetch(name: str) -> Queue | None:
        asked.append(name)
        return live.get(name)

    store = WebhookStore(fetch=fetch)
    store.replace_queues([make_queue("old").model()])
    assert store.queue("old") is not None and asked == []  # in the cache: no read
    found = store.queue("new")
    assert found is not None and found.metadata.name == "new" and asked == ["new"]
    assert store.queue("gone") is None and asked == ["new", "gone"]
    assert "new" not in store.queues


def test_groups_of_every_kind_count_in_their_queue_and_relist_by_kind() -> None:
    """A Coscheduling or native group names its queue by annotation; a relist of one kind leaves
    the others' groups as they were."""
    store = WebhookStore()
    store.replace_groups([_ref("v", "x", "a")])
    for kind, informed in (
        (GroupKind.COSCHEDULING, COSCHEDULING_GROUPS),
        (GroupKind.NATIVE, NATIVE_GROUPS),
    ):
        body = make_group("g").ns("x").queue("a").kind_object(kind)
        informed.upsert(store, AnnotatedGroupRef.model_validate(body))
    assert store.pod_groups_in("a") == [
        "x/podgroups.scheduling.k8s.io/g",
        "x/podgroups.scheduling.x-k8s.io/g",
        "x/v",
    ]
    COSCHEDULING_GROUPS.replace(store, [])
    assert store.pod_groups_in("a") == ["x/podgroups.scheduling.k8s.io/g", "x/v"]
    NATIVE_GROUPS.delete(store, AnnotatedGroupRef.model_validate(make_group("g").ns("x").build()))
    assert store.pod_groups_in("a") == ["x/v"]


def test_a_pod_group_being_deleted_counts_in_no_queue() -> None:
    """A native PodGroup stays behind its finalizer until its pods are gone: deleting its queue
    meanwhile is no harm, the gang is going."""
    store = WebhookStore()
    store.upsert_group(_ref("g", "x", "a"))
    going = make_group("g").ns("x").queue("a").build()
    going["metadata"]["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    store.upsert_group(PodGroupRef.model_validate(going))
    assert store.pod_groups_in("a") == []
    native = make_group("n").ns("x").queue("a").kind_object(GroupKind.NATIVE)
    native["metadata"]["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    NATIVE_GROUPS.replace(store, [AnnotatedGroupRef.model_validate(native)])
    assert store.pod_groups_in("a") == []


def _names(queues: Sequence[Queue]) -> list[str]:
    return [q.metadata.name for q in queues]


def test_child_queues_follow_their_parent_through_moves_and_deletes() -> None:
    """By `spec.parent`: a queue naming none, or `root`, is a child of root; one naming itself is
    no child of its own."""
    store = WebhookStore()
    store.replace_queues(
        [
            make_queue("root").model(),
            make_queue("ml").model(),
            make_queue("train").set("spec.parent", "ml").model(),
            make_queue("serve").set("spec.parent", "ml").model(),
            make_queue("top").set("spec.parent", "root").model(),
            make_queue("self").set("spec.parent", "self").model(),
        ]
    )
    assert _names(store.children("root")) == ["ml", "top"]
    assert _names(store.children("ml")) == ["serve", "train"]
    assert store.children("self") == [] and store.children("train") == []
    store.upsert_queue(make_queue("serve").set("spec.parent", "train").weight(2).model())  # moved
    assert _names(store.children("ml")) == ["train"]
    moved = store.children("train")
    assert _names(moved) == ["serve"] and moved[0].spec.weight == 2  # the version stored last
    store.upsert_queue(make_queue("train").model())  # to the top, its child with it
    assert _names(store.children("root")) == ["ml", "top", "train"]
    assert _names(store.children("train")) == ["serve"]
    store.delete_queue(make_queue("serve").model())
    assert store.children("train") == []
    store.replace_queues([make_queue("other").set("spec.parent", "ml").model()])
    assert store.children("root") == [] and _names(store.children("ml")) == ["other"]
