"""The cluster as Lahar knows it: nodes, pods and what each node has left, kept from watch events.

Pure bookkeeping, no I/O: the informers feed it events, the bind action tells it what it bound, and
decisions read `snapshot()`. All calls happen on one thread (the server's event loop).

Accounting follows the scheduler: a pod counts on `spec.nodeName` with its effective request until
it finishes (Succeeded/Failed) or is deleted; pods still terminating keep counting. A pod Lahar has
just bound is *assumed*: it counts on its node at once, before the watch shows the binding. The
watch then confirms it (the count stays, never doubled); an assumption the watch never confirms
expires after `assume_ttl` seconds, so a binding lost in flight cannot leak capacity forever. A
bind that returns after the watch showed its pod deleted assumes nothing: the pod stays gone.

A gang's pods (`gang_pods`) include those its Volcano Job will have once Lahar admits it
(`cache.expected`), which the Job's controller has not created yet. A pod kube-scheduler asks
about before the watch has shown it (`learn`) is taken from the scheduler's copy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cachetools import TTLCache

from extender.api.batch import Job
from extender.api.objects import Node, Pod, PriorityClass
from extender.api.provisioning import ProvisioningRequest
from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import GroupKind, PodGroup, Queue, gang_key, stray_gate
from extender.api.topology import HyperNode
from extender.cache.expected import ExpectedPods
from extender.cache.snapshot import ChangeLog, NodeInfo, Snapshot


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a pod counts and how much: the request it holds on `node`."""

    node: str
    request: Resources
    assumed_at: float | None = None  # set while the binding is not yet seen by the watch


class ClusterState:
    def __init__(self, *, assume_ttl: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self._assume_ttl = assume_ttl
        self._clock = clock
        self._nodes: dict[str, Node] = {}
        self._requested: dict[str, Resources] = {}
        self._infos: dict[str, NodeInfo] = {}
        self.pods: dict[str, Pod] = {}  # by uid
        # Uids the watch showed deleted lately: a bind of one that completes after its delete
        # (a slow or retried call) must not bring it back as a pod that no event will remove.
        self._deleted: TTLCache[str, bool] = TTLCache(maxsize=65536, ttl=assume_ttl, timer=clock)
        self.terminating: set[str] = set()  # uids of the pods with a deletionTimestamp
        self._placements: dict[str, Placement] = {}  # by pod uid
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pod_groups: dict[str, PodGroup] = {}  # by namespace/name
        self.queues: dict[str, Queue] = {}
        self.hyper_nodes: dict[str, HyperNode] = {}  # by name (cluster-scoped)
        # The ProvisioningRequests Lahar made (its label), by namespace/name.
        self.provisioning_requests: dict[str, ProvisioningRequest] = {}
        # Moves when what the network topology resolves to may have changed: a HyperNode's spec,
        # a node added or removed, or a node's labels (a HyperNode's labelMatch reads them).
        self.topology_version = 0
        self.members: dict[str, set[str]] = {}  # gang key -> uids of its pods
        # The pods Jobs waiting for their gang's admission will have (`cache.expected`).
        self.expected = ExpectedPods()
        # Gang key -> the order in which the cache first saw the gang (its PodGroup or a pod):
        # the watch delivers objects in the order they were written, so gangs created within
        # the same second (creationTimestamp's resolution) still line up first come, first served.
        self.arrivals: dict[str, int] = {}
        self._arrived = 0
        # Which gang changed at which gang generation (its pods, their placements, its
        # PodGroup): the layers above keep what they derive from a gang until it changes
        # (gangs.members' views), since a filter call at thousands of gangs reads every gang and
        # nearly all are as they were at the call before.
        self._gang_changes = ChangeLog()
        # Grows whenever a gang's pods or PodGroup change: with `generation`, it keys gang plans.
        self.groups_version = 0
        # Grows when a queue's spec or state, or a PriorityClass, changes: what fair order reads.
        self.queues_version = 0
        # Called (on the loop) when capacity may have been freed: a pod stopped counting, or a
        # node appeared or changed. The waker retries parked gangs then.
        self.on_capacity_freed: list[Callable[[], None]] = []
        self.on_pod_group: list[Callable[[str], None]] = []  # a PodGroup appeared or changed
        # What queue status counts read changed: a Queue, or a PodGroup's phase or existence.
        self.on_queue_change: list[Callable[[], None]] = []
        # What the network topology resolves to may have changed (`topology_version` moved).
        self.on_topology_change: list[Callable[[], None]] = []
        # A gang's members changed: one joined or left, or a member's phase or node changed.
        self.on_gang_changed: list[Callable[[str], None]] = []
        # A pod held by Lahar's gate alone that names no group Lahar reads (`stray_gate`).
        self.on_stray_gate: list[Callable[[Pod], None]] = []
        # One of Lahar's ProvisioningRequests appeared, changed or went (its key).
        self.on_provisioning_request: list[Callable[[str], None]] = []
        self._changes = ChangeLog()
        self._membership = 0
        self._snapshot: Snapshot | None = None
        self._capacity: Resources | None = None  # None: to be summed again

    @property
    def generation(self) -> int:
        """Grows by one with every change to any node's view."""
        return self._changes.generation

    # -- nodes ---------------------------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        self._nodes[node.metadata.name] = node
        self._refresh(node.metadata.name)

    def delete_node(self, name: str) -> None:
        self._nodes.pop(name, None)
        self._refresh(name)

    def replace_nodes(self, nodes: Iterable[Node]) -> None:
        """A full list: nodes missing from it are gone."""
        listed = {node.metadata.name: node for node in nodes}
        for name in set(self._nodes) - set(listed):
            self.delete_node(name)
        for node in listed.values():
            self.upsert_node(node)

    # -- priority classes ----------------------------------------------------------------------

    def upsert_priority_class(self, priority_class: PriorityClass) -> None:
        previous = self.priority_classes.get(priority_class.metadata.name)
        self.priority_classes[priority_class.metadata.name] = priority_class
        if previous is None or previous.value != priority_class.value:
            self.queues_version += 1

    def delete_priority_class(self, name: str) -> None:
        if self.priority_classes.pop(name, None) is not None:
            self.queues_version += 1

    def replace_priority_classes(self, classes: Iterable[PriorityClass]) -> None:
        listed = {c.metadata.name: c for c in classes}
        values = {name: c.value for name, c in self.priority_classes.items()}
        self.priority_classes = listed
        if values != {name: c.value for name, c in listed.items()}:
            self.queues_version += 1  # a relist that changed nothing keeps the fair order

    # -- PodGroups and Queues -----------------------------------------------------------------

    def upsert_pod_group(self, group: PodGroup) -> None:
        """A new PodGroup or a new spec is a gang change; a status write is not."""
        previous = self.pod_groups.get(group.key)
        self.pod_groups[group.key] = group
        self._arrive(group.key)
        self._touch_gang(group.key)
        if (
            previous is None
            or previous.spec != group.spec
            or previous.problem != group.problem
            or previous.gather_timeout != group.gather_timeout
        ):
            self.groups_version += 1
            for callback in self.on_pod_group:
                callback(group.key)
        if previous is None or previous.status.phase != group.status.phase:
            self._queue_changed()

    def delete_pod_group(self, key: str) -> None:
        if self.pod_groups.pop(key, None) is not None:
            self._leave(key)
            self._touch_gang(key)
            self.groups_version += 1
            self._queue_changed()

    def replace_pod_groups(
        self, groups: Iterable[PodGroup], kind: GroupKind = GroupKind.VOLCANO
    ) -> None:
        """A full list of one kind's groups: that kind's groups missing from it are gone; new or
        changed ones are announced."""
        listed = {group.key: group for group in groups}
        held = {key for key, group in self.pod_groups.items() if group.group_kind is kind}
        for key in held - set(listed):
            self.delete_pod_group(key)
        for group in listed.values():
            self.upsert_pod_group(group)

    def upsert_queue(self, queue: Queue) -> None:
        """A new queue, spec or state is a change to the fair order; counts written by the
        status writer are not."""
        previous = self.queues.get(queue.metadata.name)
        self.queues[queue.metadata.name] = queue
        if (
            previous is None
            or previous.spec != queue.spec
            or previous.status.state != queue.status.state
        ):
            self.queues_version += 1
        self._queue_changed()

    def delete_queue(self, name: str) -> None:
        if self.queues.pop(name, None) is not None:
            self.queues_version += 1
            self._queue_changed()

    def _queue_changed(self) -> None:
        for callback in self.on_queue_change:
            callback()

    def replace_queues(self, queues: Iterable[Queue]) -> None:
        listed = {queue.metadata.name: queue for queue in queues}
        for name in set(self.queues) - set(listed):
            self.delete_queue(name)
        for queue in listed.values():
            self.upsert_queue(queue)

    # -- HyperNodes ----------------------------------------------------------------------------

    def upsert_hyper_node(self, hyper_node: HyperNode) -> None:
        """A new HyperNode or a new spec changes the topology; a status write does not."""
        previous = self.hyper_nodes.get(hyper_node.name)
        self.hyper_nodes[hyper_node.name] = hyper_node
        if previous is None or previous.spec != hyper_node.spec:
            self._topology_changed()

    def delete_hyper_node(self, name: str) -> None:
        if self.hyper_nodes.pop(name, None) is not None:
            self._topology_changed()

    def replace_hyper_nodes(self, hyper_nodes: Iterable[HyperNode]) -> None:
        listed = {hyper_node.name: hyper_node for hyper_node in hyper_nodes}
        for name in set(self.hyper_nodes) - set(listed):
            self.delete_hyper_node(name)
        for hyper_node in listed.values():
            self.upsert_hyper_node(hyper_node)

    def _topology_changed(self) -> None:
        """The gangs that ask for a network topology are planned anew (their views hold what
        the topology offers them)."""
        self.topology_version += 1
        for key, group in self.pod_groups.items():
            if group.spec.network_topology is not None or group.spec.sub_group_policy:
                self._touch_gang(key)
        for callback in self.on_topology_change:
            callback()
        self._capacity_freed()  # (a gang that waited for a HyperNode may fit now)

    # -- ProvisioningRequests ------------------------------------------------------------------

    def upsert_provisioning_request(self, request: ProvisioningRequest) -> None:
        self.provisioning_requests[request.key] = request
        for callback in self.on_provisioning_request:
            callback(request.key)

    def delete_provisioning_request(self, key: str) -> None:
        if self.provisioning_requests.pop(key, None) is not None:
            for callback in self.on_provisioning_request:
                callback(key)

    def replace_provisioning_requests(self, requests: Iterable[ProvisioningRequest]) -> None:
        listed = {request.key: request for request in requests}
        for key in set(self.provisioning_requests) - set(listed):
            self.delete_provisioning_request(key)
        for request in listed.values():
            if self.provisioning_requests.get(request.key) != request:
                self.upsert_provisioning_request(request)

    def gang_pods(self, key: str) -> list[Pod]:
        """The pods that name gang `key`, by name (finished ones included), and the pods its
        Job will have that are not created yet (`cache.expected`)."""
        pods = [self.pods[uid] for uid in self.members.get(key, ()) if uid in self.pods]
        expected = self.expected.of(key)
        if expected:
            names = {pod.metadata.name for pod in pods}
            pods += [pod for name, pod in expected.items() if name not in names]
        return sorted(pods, key=lambda pod: pod.metadata.name)

    # -- Jobs ----------------------------------------------------------------------------------

    def upsert_job(self, job: Job) -> None:
        self._expected_changed(self.expected.upsert(job, self._priority_of))

    def delete_job(self, key: str) -> None:
        self._expected_changed(self.expected.delete(key))

    def replace_jobs(self, jobs: Iterable[Job]) -> None:
        for key in self.expected.replace(jobs, self._priority_of):
            self._expected_changed(key)

    def _priority_of(self, name: str) -> int:
        """The priority the API server gives a pod of PriorityClass `name` ("": none)."""
        if name:
            known = self.priority_classes.get(name)
            return known.value if known is not None else 0
        default = (c.value for c in self.priority_classes.values() if c.global_default)
        return next(default, 0)

    def _expected_changed(self, key: str | None) -> None:
        """The pods gang `key` expects changed: a change of its members."""
        if key is None:
            return
        self._touch_gang(key)
        self.groups_version += 1
        for callback in self.on_gang_changed:
            callback(key)

    def known_pod(self, uid: str, resource_version: str) -> Pod | None:
        """The pod `uid` as the cache holds it, if at exactly `resource_version`."""
        pod = self.pods.get(uid)
        if pod is None or pod.metadata.resource_version != resource_version:
            return None
        return pod

    def placed_on(self, uid: str) -> str | None:
        """The node a pod counts on (bound, or assumed by Lahar), if any."""
        placement = self._placements.get(uid)
        return placement.node if placement is not None else None

    # -- pods ----------------------------------------------------------------------------------

    def upsert_pod(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        previous = self.pods.get(uid)
        self.pods[uid] = pod
        if pod.metadata.deletion_timestamp is not None:
            self.terminating.add(uid)
        else:
            self.terminating.discard(uid)
        self._index(previous, pod)
        if pod.spec.scheduling_gates and stray_gate(pod):
            for callback in self.on_stray_gate:
                callback(pod)
        current = self._placements.get(uid)
        wanted: Placement | None = None
        if not pod.finished:
            if pod.spec.node_name:
                wanted = Placement(pod.spec.node_name, pod.request)
            elif current is not None and current.assumed_at is not None:
                wanted = current  # the watch has not caught up with our binding yet
        self._place(uid, wanted)

    def learn(self, pod: Pod) -> None:
        """A pod kube-scheduler asks about before the watch has shown it (created a moment ago):
        taken as the scheduler's copy shows it, so that its gang counts it at once and its bind
        waits at the barrier with the others (the watch's events for it apply as usual); not a
        pod the watch showed deleted."""
        uid = pod.metadata.uid
        if uid and uid not in self.pods and uid not in self._deleted:
            self.upsert_pod(pod)

    def delete_pod(self, uid: str) -> None:
        self._deleted[uid] = True
        self.terminating.discard(uid)
        self._index(self.pods.pop(uid, None), None)
        self._place(uid, None)

    def replace_pods(self, pods: Iterable[Pod]) -> None:
        """A full list: pods missing from it are gone (assumed ones too, unless listed)."""
        listed = {pod.metadata.uid: pod for pod in pods}
        for uid in (set(self.pods) | set(self._placements)) - set(listed):
            self.delete_pod(uid)
        for pod in listed.values():
            self.upsert_pod(pod)

    # -- assumed bindings ----------------------------------------------------------------------

    def assume(self, pod: Pod, node: str) -> None:
        """Count `pod` on `node` now: Lahar has just bound it there (unless the watch has shown
        it deleted meanwhile: then it holds nothing)."""
        uid = pod.metadata.uid
        if uid in self._deleted:
            return
        if uid not in self.pods:
            self.upsert_pod(pod)
        current = self._placements.get(uid)
        if current is not None and current.node == node and current.assumed_at is None:
            return  # the watch already shows it bound there
        self._place(uid, Placement(node, pod.request, assumed_at=self._clock()))

    def forget(self, uid: str) -> None:
        """The binding of an assumed pod failed: stop counting it."""
        current = self._placements.get(uid)
        if current is not None and current.assumed_at is not None:
            self._place(uid, None)

    def expire_assumed(self) -> list[str]:
        """Drop assumptions older than the TTL that the watch never confirmed; return their uids."""
        deadline = self._clock() - self._assume_ttl
        expired = [
            uid
            for uid, placement in self._placements.items()
            if placement.assumed_at is not None and placement.assumed_at < deadline
        ]
        for uid in expired:
            self._place(uid, None)
        return expired

    def is_assumed(self, uid: str) -> bool:
        placement = self._placements.get(uid)
        return placement is not None and placement.assumed_at is not None

    # -- reading -------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The current nodes, frozen: safe to hold across an await. The same object until the
        state changes again."""
        if self._snapshot is None or self._snapshot.generation != self.generation:
            self._snapshot = Snapshot.of(
                self._infos, self.generation, self._changes, self._membership
            )
        return self._snapshot

    def view(self) -> Snapshot:
        """The current nodes without a copy, for a decision made within one synchronous call.

        The state changes only on the event loop between such calls, so a view is consistent for
        as long as its holder does not await; filter and prioritize at 5,000 nodes use it to
        spare a copy per call. Hold `snapshot()` across an await instead."""
        return Snapshot(self._infos, self.generation, self._changes, self._membership)

    @property
    def gang_generation(self) -> int:
        """Grows by one with every change to any gang (its pods, their placements, its
        PodGroup)."""
        return self._gang_changes.generation

    def gangs_changed(self, since: int) -> set[str] | None:
        """Keys of the gangs changed after gang generation `since`; None if that is forgotten."""
        return self._gang_changes.changed(since, self.gang_generation)

    def capacity(self) -> Resources:
        """What the schedulable nodes offer together. Summed again only after a node appeared,
        went, or changed its allocatable or cordon; bindings leave it as it is."""
        if self._capacity is None:
            self._capacity = sum(
                (info.allocatable for info in self._infos.values() if not info.unschedulable),
                EMPTY,
            )
        return self._capacity

    def sizes(self) -> dict[str, int]:
        assumed = sum(1 for p in self._placements.values() if p.assumed_at is not None)
        return {
            "nodes": len(self._nodes),
            "pods": len(self.pods),
            "assumed_pods": assumed,
            "priority_classes": len(self.priority_classes),
            "pod_groups": len(self.pod_groups),
            "queues": len(self.queues),
        }

    # -- internals -----------------------------------------------------------------------------

    def _index(self, previous: Pod | None, pod: Pod | None) -> None:
        """Keep `members` current; a change to a gang member's phase or node is a gang change."""
        before = gang_key(previous) if previous is not None else None
        after = gang_key(pod) if pod is not None else None
        if before is None and after is None:
            return
        for key in (before, after):
            if key is not None:
                self._touch_gang(key)
        if before is not None and before != after:
            uids = self.members.get(before, set())
            uids.discard(previous.metadata.uid)  # type: ignore[union-attr]
            if not uids:
                self.members.pop(before, None)
                self._leave(before)
        if after is not None:
            self._arrive(after)
            self.members.setdefault(after, set()).add(pod.metadata.uid)  # type: ignore[union-attr]
        if (
            previous is None
            or pod is None
            or before != after
            or previous.status.phase != pod.status.phase
            or previous.metadata.deletion_timestamp != pod.metadata.deletion_timestamp
        ):
            self.groups_version += 1  # placements are covered by `generation`
        elif previous.spec.node_name == pod.spec.node_name:
            return
        for key in {k for k in (before, after) if k is not None}:
            for callback in self.on_gang_changed:
                callback(key)

    def _arrive(self, key: str) -> None:
        if key not in self.arrivals:
            self.arrivals[key] = self._arrived
            self._arrived += 1

    def _leave(self, key: str) -> None:
        """Forget the gang's arrival once neither its PodGroup nor any pod is left."""
        if key not in self.pod_groups and key not in self.members:
            self.arrivals.pop(key, None)

    def _touch_gang(self, key: str) -> None:
        self._gang_changes.record(key)

    def _place(self, uid: str, wanted: Placement | None) -> None:
        current = self._placements.get(uid)
        if current == wanted:
            return
        if (
            current is not None
            and wanted is not None
            and (current.node, current.request) == (wanted.node, wanted.request)
        ):
            self._placements[uid] = wanted  # the watch confirmed an assumption: usage unchanged
            return
        pod = self.pods.get(uid)
        key = gang_key(pod) if pod is not None else None
        if key is not None:
            self._touch_gang(key)  # a member placed or unplaced
        if current is not None:
            self._add(current.node, EMPTY - current.request)
        if wanted is None:
            self._placements.pop(uid, None)
        else:
            self._placements[uid] = wanted
            self._add(wanted.node, wanted.request)
        if current is not None and (wanted is None or wanted.node != current.node):
            self._capacity_freed()

    def _add(self, node: str, delta: Resources) -> None:
        total = self._requested.get(node, EMPTY) + delta
        if total:
            self._requested[node] = total
        else:
            self._requested.pop(node, None)
        self._refresh(node)

    def _refresh(self, name: str) -> None:
        node = self._nodes.get(name)
        previous = self._infos.get(name)
        if node is None:
            if self._infos.pop(name, None) is None:
                return  # it was not known: nothing changes
            self._membership += 1
            self._capacity = None
            if self.hyper_nodes:
                self._topology_changed()
        else:
            info = NodeInfo(
                name=name,
                allocatable=node.status.allocatable,
                requested=self._requested.get(name, EMPTY),
                unschedulable=node.spec.unschedulable,
                labels=node.metadata.labels,
                taints=tuple(node.spec.taints),
            )
            if previous is not None and previous.same_as(info):
                return  # a heartbeat or status the policies do not read: nothing to recompute
            if previous is None:
                self._membership += 1
            if self.hyper_nodes and (previous is None or previous.labels != info.labels):
                self._topology_changed()
            if (
                previous is None
                or previous.allocatable != info.allocatable
                or previous.unschedulable != info.unschedulable
            ):
                self._capacity = None
            self._infos[name] = info
        self._changes.record(name)
        if node is not None and (previous is None or previous.requested == info.requested):
            self._capacity_freed()  # the node itself changed (capacity, cordon, labels, taints)

    def _capacity_freed(self) -> None:
        for callback in self.on_capacity_freed:
            callback()
