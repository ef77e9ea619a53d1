"""What the webhook's rules read from the cluster: the Queues, and which PodGroups name each
queue. Filled by two informers on the event loop, read by the rules there too (a `QueueView`), so
a rule never waits for the network. A PodGroup created moments ago may not be here yet: deleting
its queue in that instant is the one race this accepts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from extender.api.scheduling import API_VERSION, PodGroup, Queue
from extender.cache.informer import Kind


class WebhookStore:
    def __init__(self) -> None:
        self.queues: dict[str, Queue] = {}
        self._group_queue: dict[str, str] = {}  # PodGroup key -> its queue
        self._by_queue: defaultdict[str, set[str]] = defaultdict(set)

    # -- QueueView ------------------------------------------------------------------------------

    def queue(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def pod_groups_in(self, queue: str) -> Sequence[str]:
        return sorted(self._by_queue.get(queue, ()))

    # -- informer callbacks ---------------------------------------------------------------------

    def replace_queues(self, queues: list[Queue]) -> None:
        self.queues = {q.metadata.name: q for q in queues}

    def upsert_queue(self, queue: Queue) -> None:
        self.queues[queue.metadata.name] = queue

    def delete_queue(self, queue: Queue) -> None:
        self.queues.pop(queue.metadata.name, None)

    def replace_groups(self, groups: list[PodGroup]) -> None:
        self._group_queue, self._by_queue = {}, defaultdict(set)
        for group in groups:
            self.upsert_group(group)

    def upsert_group(self, group: PodGroup) -> None:
        self.delete_group(group)
        self._group_queue[group.key] = group.queue
        self._by_queue[group.queue].add(group.key)

    def delete_group(self, group: PodGroup) -> None:
        queue = self._group_queue.pop(group.key, None)
        if queue is not None:
            members = self._by_queue[queue]
            members.discard(group.key)
            if not members:
                del self._by_queue[queue]


QUEUES: Kind[WebhookStore, Queue] = Kind(
    "queues",
    f"/apis/{API_VERSION}/queues",
    Queue,
    WebhookStore.replace_queues,
    WebhookStore.upsert_queue,
    WebhookStore.delete_queue,
)
GROUPS: Kind[WebhookStore, PodGroup] = Kind(
    "podgroups",
    f"/apis/{API_VERSION}/podgroups",
    PodGroup,
    WebhookStore.replace_groups,
    WebhookStore.upsert_group,
    WebhookStore.delete_group,
)
