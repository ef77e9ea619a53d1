"""The cluster as Lahar knows it: nodes, pods and what each node has left, kept from watch events.

Pure bookkeeping, no I/O: the informers feed it events, the bind action tells it what it bound, and
decisions read `snapshot()`. All calls happen on one thread (the server's event loop).

Accounting follows the scheduler: a pod counts on `spec.nodeName` with its effective request until
it finishes (Succeeded/Failed) or is deleted; pods still terminating keep counting. A pod Lahar has
just bound is *assumed*: it counts on its node at once, before the watch shows the binding. The
watch then confirms it (the count stays, never doubled); an assumption the watch never confirms
expires after `assume_ttl` seconds, so a binding lost in flight cannot leak capacity forever. A
bind that returns after the watch showed its pod deleted assumes nothing: the pod stays gone.
A pod Lahar evicts is *going* from the moment it sets out to evict it (`evicting`), as the
deletionTimestamp the watch shows a moment later says: until then the watch may still show it
as it was, and its gang would stand on it, so the replacement its Job's controller makes at once
would be bound as a member beyond minMember, on the room freed for the preemptor, instead of
waiting its turn in the fair order. An eviction that fails (`kept`) takes the mark back.

A gang's pods (`gang_pods`) include those its Volcano Job will have once Lahar admits it
(`cache.expected`), which the Job's controller has not created yet. A pod kube-scheduler asks
about before the watch has shown it (`learn`) is taken from the scheduler's copy.

Readers get read-only mappings (`pods`, `pod_groups`, `queues`, ...): only the methods change
the state. Where it stands is one immutable value, `stamp` (the nodes' generation and the
versions of gangs, queues and topology), which the engine keys what it derives on. What changed
is said as typed events into one hub (`cache.events`), which the process hands in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import NamedTuple

from cachetools import TTLCache

from extender.api.batch import Job
from extender.api.objects import Node, Pod, PriorityClass
from extender.api.provisioning import ProvisioningRequest
from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import GroupKind, PodGroup, Queue, gang_key, stray_gate
from extender.api.topology import HyperNode
from extender.cache.events import (
    CapacityFreed,
    Events,
    GangChanged,
    PodGroupChanged,
    ProvisioningRequestChanged,
    QueuesChanged,
    StrayGate,
    TopologyChanged,
)
from extender.cache.expected import ExpectedPods
from extender.cache.snapshot import ChangeLog, NodeInfo, Snapshot


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a pod counts and how much: the request it takes on `node`."""

    node: str
    request: Resources
    assumed_at: float | None = None  # set while the binding is not yet seen by the watch


class Stamp(NamedTuple):
    """What the state's changes have reached: the nodes' generation (`Snapshot.generation`), and
    versions that move when gangs' pods or PodGroups change (`groups`), when a queue's spec or
    state or a PriorityClass changes (`queues`: what the fair order reads), and when what the
    network topology resolves to may have changed (`topology`: a HyperNode's spec, a node
    added, removed or relabelled)."""

    nodes: int
    groups: int
    queues: int
    topology: int


class ClusterState:
    def __init__(
        self,
        *,
        assume_ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        events: Events | None = None,
    ):
        """`events`: the hub to say what changed into (`cache.events`; a hub of its own, which
        delivers at once, when none is given)."""
        self._assume_ttl = assume_ttl
        self._clock = clock
        self.events = events if events is not None else Events()
        self._nodes: dict[str, Node] = {}
        self._requested: dict[str, Resources] = {}
        self._infos: dict[str, NodeInfo] = {}
        self._pods: dict[str, Pod] = {}  # by uid
        # Uids the watch showed deleted lately: a bind of one that completes after its delete
        # (a slow or retried call) must not bring it back as a pod that no event will remove.
        self._deleted: TTLCache[str, bool] = TTLCache(maxsize=65536, ttl=assume_ttl, timer=clock)
        self._terminating: set[str] = set()  # uids of the pods with a deletionTimestamp
        # Pods Lahar evicts that the watch does not show going yet, as the watch last showed
        # them (by uid): the state holds them marked going (`evicting`).
        self._evicting: dict[str, Pod] = {}
        self._placements: dict[str, Placement] = {}  # by pod uid
        self._priority_classes: dict[str, PriorityClass] = {}
        self._pod_groups: dict[str, PodGroup] = {}  # by namespace/name
        self._queues: dict[str, Queue] = {}
        self._hyper_nodes: dict[str, HyperNode] = {}  # by name (cluster-scoped)
        # The ProvisioningRequests Lahar made (its label), by namespace/name.
        self._provisioning_requests: dict[str, ProvisioningRequest] = {}
        # Moves when what the network topology resolves to may have changed: a HyperNode's spec,
        # a node added or removed, or a node's labels (a HyperNode's labelMatch reads them).
        self._topology_version = 0
        self._members: dict[str, set[str]] = {}  # gang key -> uids of its pods
        # The pods Jobs waiting for their gang's admission will have (`cache.expected`).
        self.expected = ExpectedPods()
        # Gang key -> the order in which the cache first saw the gang (its PodGroup or a pod):
        # the watch delivers objects in the order they were written, so gangs created within
        # the same second (creationTimestamp's resolution) still line up first come, first served.
        self._arrivals: dict[str, int] = {}
        self._arrived = 0
        # Which gang changed at which gang generation (its pods, their placements, its
        # PodGroup): the layers above keep what they derive from a gang until it changes
        # (gangs.members' views), since a filter call at thousands of gangs reads every gang and
        # nearly all are as they were at the call before.
        self._gang_changes = ChangeLog()
        # Grows whenever a gang's pods or PodGroup change: with `generation`, it keys gang plans.
        self._groups_version = 0
        # Grows when a queue's spec or state, or a PriorityClass, changes: what fair order reads.
        self._queues_version = 0
        self._changes = ChangeLog()
        self._membership = 0
        self._snapshot: Snapshot | None = None
        self._capacity: Resources | None = None  # None: to be summed again

    @property
    def generation(self) -> int:
        """Grows by one with every change to any node's view."""
        return self._changes.generation

    @property
    def stamp(self) -> Stamp:
        """Where the state stands now, in one value: equal stamps, the same nodes, gangs,
        queues and topology as far as what the engine derives from them goes."""
        return Stamp(
            self._changes.generation,
            self._groups_version,
            self._queues_version,
            self._topology_version,
        )

    # -- read-only views (the informers and the bind action change them through the methods)

    @property
    def pods(self) -> Mapping[str, Pod]:
        """The pods, by uid."""
        return self._pods

    @property
    def terminating(self) -> AbstractSet[str]:
        """The uids of the pods with a deletionTimestamp."""
        return self._terminating

    @property
    def priority_classes(self) -> Mapping[str, PriorityClass]:
        return self._priority_classes

    @property
    def pod_groups(self) -> Mapping[str, PodGroup]:
        """Every kind's PodGroups, by gang key."""
        return self._pod_groups

    @property
    def queues(self) -> Mapping[str, Queue]:
        return self._queues

    @property
    def hyper_nodes(self) -> Mapping[str, HyperNode]:
        """By name (cluster-scoped)."""
        return self._hyper_nodes

    @property
    def provisioning_requests(self) -> Mapping[str, ProvisioningRequest]:
        """The ProvisioningRequests Lahar made (its label), by namespace/name."""
        return self._provisioning_requests

    @property
    def members(self) -> Mapping[str, AbstractSet[str]]:
        """Gang key -> the uids of its pods."""
        return self._members

    @property
    def arrivals(self) -> Mapping[str, int]:
        """Gang key -> the order in which the cache first saw the gang."""
        return self._arrivals

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
        previous = self._priority_classes.get(priority_class.metadata.name)
        self._priority_classes[priority_class.metadata.name] = priority_class
        if previous is None or previous.value != priority_class.value:
            self._queues_version += 1

    def delete_priority_class(self, name: str) -> None:
        if self._priority_classes.pop(name, None) is not None:
            self._queues_version += 1

    def replace_priority_classes(self, classes: Iterable[PriorityClass]) -> None:
        listed = {c.metadata.name: c for c in classes}
        values = {name: c.value for name, c in self._priority_classes.items()}
        self._priority_classes = listed
        if values != {name: c.value for name, c in listed.items()}:
            self._queues_version += 1  # a relist that changed nothing keeps the fair order

    # -- PodGroups and Queues -----------------------------------------------------------------

    def upsert_pod_group(self, group: PodGroup) -> None:
        """A new PodGroup or a new spec is a gang change; a status write is not."""
        previous = self._pod_groups.get(group.key)
        self._pod_groups[group.key] = group
        self._arrive(group.key)
        self._touch_gang(group.key)
        if (
            previous is None
            or previous.spec != group.spec
            or previous.problem != group.problem
            or previous.gather_timeout != group.gather_timeout
        ):
            self._groups_version += 1
            self.events.publish(PodGroupChanged(group.key))
        if previous is None or previous.status.phase != group.status.phase:
            self._queue_changed()

    def delete_pod_group(self, key: str) -> None:
        if self._pod_groups.pop(key, None) is not None:
            self._leave(key)
            self._touch_gang(key)
            self._groups_version += 1
            self._queue_changed()

    def replace_pod_groups(
        self, groups: Iterable[PodGroup], kind: GroupKind = GroupKind.VOLCANO
    ) -> None:
        """A full list of one kind's groups: that kind's groups missing from it are gone; new or
        changed ones are announced."""
        listed = {group.key: group for group in groups}
        known = {key for key, group in self._pod_groups.items() if group.group_kind is kind}
        for key in known - set(listed):
            self.delete_pod_group(key)
        for group in listed.values():
            self.upsert_pod_group(group)

    def upsert_queue(self, queue: Queue) -> None:
        """A new queue, spec or state is a change to the fair order; counts written by the
        status writer are not."""
        previous = self._queues.get(queue.metadata.name)
        self._queues[queue.metadata.name] = queue
        if (
            previous is None
            or previous.spec != queue.spec
            or previous.status.state != queue.status.state
        ):
            self._queues_version += 1
        self._queue_changed()

    def delete_queue(self, name: str) -> None:
        if self._queues.pop(name, None) is not None:
            self._queues_version += 1
            self._queue_changed()

    def _queue_changed(self) -> None:
        self.events.publish(QueuesChanged())

    def replace_queues(self, queues: Iterable[Queue]) -> None:
        listed = {queue.metadata.name: queue for queue in queues}
        for name in set(self._queues) - set(listed):
            self.delete_queue(name)
        for queue in listed.values():
            self.upsert_queue(queue)

    # -- HyperNodes ----------------------------------------------------------------------------

    def upsert_hyper_node(self, hyper_node: HyperNode) -> None:
        """A new HyperNode or a new spec changes the topology; a status write does not."""
        previous = self._hyper_nodes.get(hyper_node.name)
        self._hyper_nodes[hyper_node.name] = hyper_node
        if previous is None or previous.spec != hyper_node.spec:
            self._topology_changed()

    def delete_hyper_node(self, name: str) -> None:
        if self._hyper_nodes.pop(name, None) is not None:
            self._topology_changed()

    def replace_hyper_nodes(self, hyper_nodes: Iterable[HyperNode]) -> None:
        listed = {hyper_node.name: hyper_node for hyper_node in hyper_nodes}
        for name in set(self._hyper_nodes) - set(listed):
            self.delete_hyper_node(name)
        for hyper_node in listed.values():
            self.upsert_hyper_node(hyper_node)

    def _topology_changed(self) -> None:
        """The gangs that ask for a network topology are planned anew (their views hold what
        the topology offers them)."""
        self._topology_version += 1
        for key, group in self._pod_groups.items():
            if group.spec.network_topology is not None or group.spec.sub_group_policy:
                self._touch_gang(key)
        self.events.publish(TopologyChanged())
        self._capacity_freed()  # (a gang that waited for a HyperNode may fit now)

    # -- ProvisioningRequests ------------------------------------------------------------------

    def upsert_provisioning_request(self, request: ProvisioningRequest) -> None:
        self._provisioning_requests[request.key] = request
        self.events.publish(ProvisioningRequestChanged(request.key))

    def delete_provisioning_request(self, key: str) -> None:
        if self._provisioning_requests.pop(key, None) is not None:
            self.events.publish(ProvisioningRequestChanged(key))

    def replace_provisioning_requests(self, requests: Iterable[ProvisioningRequest]) -> None:
        listed = {request.key: request for request in requests}
        for key in set(self._provisioning_requests) - set(listed):
            self.delete_provisioning_request(key)
        for request in listed.values():
            if self._provisioning_requests.get(request.key) != request:
                self.upsert_provisioning_request(request)

    def gang_pods(self, key: str) -> list[Pod]:
        """The pods that name gang `key`, by name (finished ones included), and the pods its
        Job will have that are not created yet (`cache.expected`)."""
        pods = [self._pods[uid] for uid in self._members.get(key, ()) if uid in self._pods]
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
            known = self._priority_classes.get(name)
            return known.value if known is not None else 0
        default = (c.value for c in self._priority_classes.values() if c.global_default)
        return next(default, 0)

    def _expected_changed(self, key: str | None) -> None:
        """The pods gang `key` expects changed: a change of its members."""
        if key is None:
            return
        self._touch_gang(key)
        self._groups_version += 1
        self.events.publish(GangChanged(key))

    def known_pod(self, uid: str, resource_version: str) -> Pod | None:
        """The pod `uid` as the cache holds it, if at exactly `resource_version`."""
        pod = self._pods.get(uid)
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
        if uid in self._evicting:
            if pod.metadata.deletion_timestamp is None:  # (an event from before the eviction)
                self._evicting[uid] = pod
                pod = _going(pod)
            else:
                del self._evicting[uid]  # the watch shows it going: the mark has done its work
        previous = self._pods.get(uid)
        self._pods[uid] = pod
        if pod.metadata.deletion_timestamp is not None:
            self._terminating.add(uid)
        else:
            self._terminating.discard(uid)
        self._index(previous, pod)
        if pod.spec.scheduling_gates and stray_gate(pod):
            self.events.publish(StrayGate(pod))
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
        if uid and uid not in self._pods and uid not in self._deleted:
            self.upsert_pod(pod)

    def evicting(self, uid: str) -> None:
        """Lahar sets out to evict pod `uid`: it is going from now on (a deletionTimestamp), as
        the watch will show; its gang no longer stands on it."""
        pod = self._pods.get(uid)
        if pod is None or pod.metadata.deletion_timestamp is not None or uid in self._evicting:
            return
        self._evicting[uid] = pod
        self.upsert_pod(pod)

    def kept(self, uid: str) -> None:
        """Lahar's eviction of pod `uid` failed: it is as the watch last showed it again."""
        pod = self._evicting.pop(uid, None)
        if pod is not None and uid in self._pods:
            self.upsert_pod(pod)

    def delete_pod(self, uid: str) -> None:
        self._deleted[uid] = True
        self._evicting.pop(uid, None)
        self._terminating.discard(uid)
        self._index(self._pods.pop(uid, None), None)
        self._place(uid, None)

    def replace_pods(self, pods: Iterable[Pod]) -> None:
        """A full list: pods missing from it are gone (assumed ones too, unless listed)."""
        listed = {pod.metadata.uid: pod for pod in pods}
        for uid in (set(self._pods) | set(self._placements)) - set(listed):
            self.delete_pod(uid)
        for pod in listed.values():
            self.upsert_pod(pod)

    # -- assumed bindings ----------------------------------------------------------------------

    def assume(self, pod: Pod, node: str) -> None:
        """Count `pod` on `node` now: Lahar has just bound it there (unless the watch has shown
        it deleted meanwhile: then it takes nothing)."""
        uid = pod.metadata.uid
        if uid in self._deleted:
            return
        if uid not in self._pods:
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
            "pods": len(self._pods),
            "assumed_pods": assumed,
            "priority_classes": len(self._priority_classes),
            "pod_groups": len(self._pod_groups),
            "queues": len(self._queues),
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
            uids = self._members.get(before, set())
            uids.discard(previous.metadata.uid)  # type: ignore[union-attr]
            if not uids:
                self._members.pop(before, None)
                self._leave(before)
        if after is not None:
            self._arrive(after)
            self._members.setdefault(after, set()).add(pod.metadata.uid)  # type: ignore[union-attr]
        if (
            previous is None
            or pod is None
            or before != after
            or previous.status.phase != pod.status.phase
            or previous.metadata.deletion_timestamp != pod.metadata.deletion_timestamp
        ):
            self._groups_version += 1  # placements are covered by `generation`
        elif previous.spec.node_name == pod.spec.node_name:
            return
        for key in {k for k in (before, after) if k is not None}:
            self.events.publish(GangChanged(key))

    def _arrive(self, key: str) -> None:
        if key not in self._arrivals:
            self._arrivals[key] = self._arrived
            self._arrived += 1

    def _leave(self, key: str) -> None:
        """Forget the gang's arrival once neither its PodGroup nor any pod is left."""
        if key not in self._pod_groups and key not in self._members:
            self._arrivals.pop(key, None)

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
        pod = self._pods.get(uid)
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
            if self._hyper_nodes:
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
            if self._hyper_nodes and (previous is None or previous.labels != info.labels):
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
        self.events.publish(CapacityFreed())


GOING = "evicting"  # the deletionTimestamp of a pod Lahar evicts, until the watch shows its own


def _going(pod: Pod) -> Pod:
    """`pod` marked going, as Lahar's eviction of it will have the API show it."""
    meta = pod.metadata.model_copy(update={"deletion_timestamp": GOING})
    return pod.model_copy(update={"metadata": meta})
