"""The webhook's view of queues and of the PodGroups naming each, as the informers fill it."""

from __future__ import annotations

from extender.webhook.store import WebhookStore
from tests.builders import make_group, make_queue


def test_pod_groups_follow_their_queue_through_moves_and_deletes() -> None:
    store = WebhookStore()
    store.replace_queues([make_queue("a").model(), make_queue("b").state("Closed").model()])
    store.replace_groups(
        [make_group("g1").ns("x").queue("a").model(), make_group("g2").ns("y").queue("a").model()]
    )
    assert store.pod_groups_in("a") == ["x/g1", "y/g2"]
    store.upsert_group(make_group("g1").ns("x").queue("b").model())  # moved
    assert store.pod_groups_in("a") == ["y/g2"] and store.pod_groups_in("b") == ["x/g1"]
    store.delete_group(make_group("g2").ns("y").queue("a").model())
    assert store.pod_groups_in("a") == []
    queue = store.queue("b")
    assert queue is not None and not queue.open
    store.delete_queue(make_queue("b").model())
    assert store.queue("b") is None


def test_a_relist_replaces_everything() -> None:
    store = WebhookStore()
    store.upsert_group(make_group("old").ns("x").queue("a").model())
    store.replace_groups([make_group("new").ns("x").queue("c").model()])
    assert store.pod_groups_in("a") == [] and store.pod_groups_in("c") == ["x/new"]
