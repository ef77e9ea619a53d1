"""What the webhook's rules read from the cluster: the Queues, and which PodGroups name each
queue. Filled by two informers on the event loop, read by the rules in worker threads (a
`QueueLookup`; a lock keeps each read whole), so a rule never waits for the network. Of a PodGroup
only its name and queue are decoded, so one whose other fields do not parse still holds its queue.
A queue created moments ago may not be here yet either: one the store lacks is read live (`fetch`,
in the rule's worker thread) before a rule says it does not exist. A PodGroup created moments ago
may not be here yet, so deleting its queue in that instant is let through: a gang not yet admitted
then waits whole for the missing queue (its PodGroup's condition says so) until the queue is
created again; one already admitted keeps its capacity and binds whole.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Sequence

from extender.api.scheduling import API_VERSION, PodGroupRef, Queue
from extender.cache.informer import Kind


class WebhookStore:
    def __init__(self, fetch: Callable[[str], Queue | None] | None = None) -> None:
        self.queues: dict[str, Queue] = {}
        self._fetch = fetch  # a queue the informer has not delivered, read from the API server
        self._group_queue: dict[str, str] = {}  # PodGroup key -> its queue
        self._by_queue: defaultdict[str, set[str]] = defaultdict(set)
        self._lock = threading.Lock()

    # -- QueueLookup (any thread) ---------------------------------------------------------------

    def queue(self, name: str) -> Queue | None:
        with self._lock:
            found = self.queues.get(name)
        if found is None and self._fetch is not None:
            found = self._fetch(name)  # (not kept: the informer brings it, or its deletion)
        return found

    def pod_groups_in(self, queue: str) -> Sequence[str]:
        with self._lock:
            return sorted(self._by_queue.get(queue, ()))

    # -- informer callbacks (on the loop) -------------------------------------------------------

    def replace_queues(self, queues: list[Queue]) -> None:
        with self._lock:
            self.queues = {q.metadata.name: q for q in queues}

    def upsert_queue(self, queue: Queue) -> None:
        with self._lock:
            self.queues[queue.metadata.name] = queue

    def delete_queue(self, queue: Queue) -> None:
        with self._lock:
            self.queues.pop(queue.metadata.name, None)

    def replace_groups(self, groups: list[PodGroupRef]) -> None:
        with self._lock:
            self._group_queue, self._by_queue = {}, defaultdict(set)
            for group in groups:
                self._add(group)

    def upsert_group(self, group: PodGroupRef) -> None:
        with self._lock:
            self._remove(group)
            self._add(group)

    def delete_group(self, group: PodGroupRef) -> None:
        with self._lock:
            self._remove(group)

    def _add(self, group: PodGroupRef) -> None:
        self._group_queue[group.key] = group.queue
        self._by_queue[group.queue].add(group.key)

    def _remove(self, group: PodGroupRef) -> None:
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
GROUPS: Kind[WebhookStore, PodGroupRef] = Kind(
    "podgroups",
    f"/apis/{API_VERSION}/podgroups",
    PodGroupRef,
    WebhookStore.replace_groups,
    WebhookStore.upsert_group,
    WebhookStore.delete_group,
)
