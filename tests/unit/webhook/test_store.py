"""The webhook's view of queues and of the PodGroups naming each, as the informers fill it."""

from __future__ import annotations

from extender.api.scheduling import PodGroupRef, Queue
from extender.webhook.store import WebhookStore
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


def test_a_pod_group_whose_other_fields_do_not_parse_still_holds_its_queue() -> None:
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
