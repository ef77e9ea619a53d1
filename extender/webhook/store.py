"""What the webhook's rules read from the cluster: the Queues (each queue's child queues indexed
by `spec.parent`; one naming none, or `root`, is a child of root), and which PodGroups name each
queue (Volcano's by `spec.queue`; Coscheduling's and native ones by the annotation
`scheduling.volcano.sh/queue-name`, read only where those kinds are served). Filled by informers
on the event loop, read by the rules in worker threads (a `QueueLookup`; a lock keeps each read
whole), so a rule never waits for the network. Of a PodGroup only its name and queue are decoded,
so one whose other fields do not parse still counts in its queue; one being deleted counts in none.
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
from typing import Any

from extender.admission.queue_tree import parent_of
from extender.api.objects import KubeModel, ObjectMeta
from extender.api.scheduling import (
    API_VERSION,
    DEFAULT_QUEUE,
    QUEUE_ANNOTATION,
    GroupKind,
    PodGroupRef,
    Queue,
)
from extender.cache.kinds import Kind


class AnnotatedGroupRef(KubeModel):
    """A PodGroup of another kind than Volcano's, by name and the queue its annotation names."""

    metadata: ObjectMeta = ObjectMeta()

    @property
    def queue(self) -> str:
        return self.metadata.annotations.get(QUEUE_ANNOTATION) or DEFAULT_QUEUE


class WebhookStore:
    def __init__(self, fetch: Callable[[str], Queue | None] | None = None) -> None:
        self.queues: dict[str, Queue] = {}
        self._fetch = fetch  # a queue the informer has not delivered, read from the API server
        self._group_queue: dict[str, str] = {}  # gang key -> its PodGroup's queue
        self._kind_of: dict[str, GroupKind] = {}
        self._by_queue: defaultdict[str, set[str]] = defaultdict(set)
        self._children: defaultdict[str, set[str]] = defaultdict(set)  # parent -> queue names
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

    def children(self, name: str) -> Sequence[Queue]:
        with self._lock:
            return [self.queues[child] for child in sorted(self._children.get(name, ()))]

    # -- informer callbacks (on the loop) -------------------------------------------------------

    def replace_queues(self, queues: list[Queue]) -> None:
        with self._lock:
            self.queues = {q.metadata.name: q for q in queues}
            self._children.clear()
            for queue in self.queues.values():
                self._link(queue)

    def upsert_queue(self, queue: Queue) -> None:
        with self._lock:
            self._unlink(queue.metadata.name)
            self.queues[queue.metadata.name] = queue
            self._link(queue)

    def delete_queue(self, queue: Queue) -> None:
        with self._lock:
            self._unlink(queue.metadata.name)
            self.queues.pop(queue.metadata.name, None)

    def _link(self, queue: Queue) -> None:
        parent, name = parent_of(queue), queue.metadata.name
        if parent is not None and parent != name:  # (a queue naming itself is no child of its own)
            self._children[parent].add(name)

    def _unlink(self, name: str) -> None:
        stored = self.queues.get(name)
        parent = None if stored is None else parent_of(stored)
        if parent is not None and parent in self._children:
            self._children[parent].discard(name)
            if not self._children[parent]:
                del self._children[parent]

    def replace_groups(self, groups: list[PodGroupRef]) -> None:
        named = [(group.key, group.queue) for group in groups if _counts(group.metadata)]
        self.replace_kind(GroupKind.VOLCANO, named)

    def upsert_group(self, group: PodGroupRef) -> None:
        if _counts(group.metadata):
            self.upsert_key(group.key, group.queue)
        else:
            self.delete_key(group.key)

    def delete_group(self, group: PodGroupRef) -> None:
        self.delete_key(group.key)

    def delete_key(self, key: str) -> None:
        with self._lock:
            self._remove(key)

    def replace_kind(self, kind: GroupKind, groups: list[tuple[str, str]]) -> None:
        """A full list of one kind's groups, as (gang key, queue)."""
        with self._lock:
            for key in [key for key, of in self._kind_of.items() if of is kind]:
                self._remove(key)
            for key, queue in groups:
                self._add(key, queue, kind)

    def upsert_key(self, key: str, queue: str, kind: GroupKind = GroupKind.VOLCANO) -> None:
        with self._lock:
            self._remove(key)
            self._add(key, queue, kind)

    def _add(self, key: str, queue: str, kind: GroupKind) -> None:
        self._group_queue[key] = queue
        self._kind_of[key] = kind
        self._by_queue[queue].add(key)

    def _remove(self, key: str) -> None:
        self._kind_of.pop(key, None)
        queue = self._group_queue.pop(key, None)
        if queue is not None:
            members = self._by_queue[queue]
            members.discard(key)
            if not members:
                del self._by_queue[queue]


def _counts(meta: ObjectMeta) -> bool:
    """Whether the PodGroup counts in its queue: one being deleted does not (a native PodGroup stays
    until its pods are gone, behind the finalizer kube-controller-manager removes)."""
    return meta.deletion_timestamp is None


def _other_groups(kind: GroupKind) -> Kind[WebhookStore, AnnotatedGroupRef]:
    def key(group: AnnotatedGroupRef) -> str:
        return kind.key(group.metadata.namespace, group.metadata.name)

    def replace(store: WebhookStore, groups: list[Any]) -> None:
        named = [(key(group), group.queue) for group in groups if _counts(group.metadata)]
        store.replace_kind(kind, named)

    def upsert(store: WebhookStore, group: AnnotatedGroupRef) -> None:
        if _counts(group.metadata):
            store.upsert_key(key(group), group.queue, kind)
        else:
            store.delete_key(key(group))

    def delete(store: WebhookStore, group: AnnotatedGroupRef) -> None:
        store.delete_key(key(group))

    path = f"/apis/{kind.api_version}/podgroups"
    return Kind(
        kind.value,
        path,
        AnnotatedGroupRef,
        replace,
        upsert,
        delete,
        optional=True,
        object_kind="PodGroup",
    )


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
COSCHEDULING_GROUPS = _other_groups(GroupKind.COSCHEDULING)
NATIVE_GROUPS = _other_groups(GroupKind.NATIVE)
KINDS = (QUEUES, GROUPS, COSCHEDULING_GROUPS, NATIVE_GROUPS)
