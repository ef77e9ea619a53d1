"""Fluent builders for the objects tests use, reading like the scenario:

make_pod("w-0").ns(ns).cpu("1").build()            # a dict to apply to a real cluster
make_pod("w-0").cpu("1").on("n1").model()          # an api.objects.Pod for pure policy tests
make_node("n1").cpu("4").memory("8Gi").model()
make_group("tf").min_member(4).build()             # a PodGroup; pods join with .group("tf")
make_queue("research").weight(3).capability(cpu="8").model()   # a Queue
make_queue("team-a").parent("ml").model()                      # a child queue of ml
make_hyper_node("s0").tier(1, "switch").nodes("n0", "n1").model()  # a HyperNode (a switch)
make_job("tf").task("ps", 1, cpu="1").task("worker", 2).policy("PodEvicted", "RestartJob")
make_job_pod(job, "worker", 0).phase("Failed", exit_code=3).model()   # a pod the controller made
make_review(make_job("tf").task("w").build()).update(old).request()   # an AdmissionRequest
cluster([make_node("n1").cpu("4")], [make_pod("a").cpu("1").on("n1")])   # a ClusterState
make_trace().nodes(2, cpu="4").job(make_trace_job("tf").task("w", 2)).model()   # a simulate Trace
make_trace_job("tf").task("w", 2).bound("n0", None).set(started=-60)   # running at time 0
make_raw_cluster().nodes(make_node("n1")).pods(make_pod("a").on("n1")).build()   # a listing
make_answer("ml/tf").starts(600, 200, 1400).on("n0").after("ml/a", 600, 200, 1400).build()

The Job, job pod and review builders live in `tests.batch_builders` and are re-exported here.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Self

import yaml

from extender.api.coscheduling import API_VERSION as COSCHEDULING_API
from extender.api.coscheduling import CoschedulingPodGroup
from extender.api.native_groups import API_VERSION as NATIVE_API
from extender.api.native_groups import NativePodGroup
from extender.api.objects import Node, Pod
from extender.api.scheduling import (
    API_VERSION,
    COSCHEDULING_LABEL,
    GROUP_ANNOTATION,
    QUEUE_ANNOTATION,
    TASK_ANNOTATION,
    GroupKind,
    PodGroup,
    Queue,
)
from extender.api.topology import HyperNode
from extender.cache.state import ClusterState
from extender.kube.snapshot_lists import RawCluster
from extender.simulate.trace import Trace, TraceJob, parse_trace
from extender.simulate.whatif import HORIZON, Answer, Blocker, Delay
from tests.batch_builders import (
    JobBuilder,
    JobPodBuilder,
    ReviewBuilder,
    make_job,
    make_job_pod,
    make_review,
)
from tests.paths import set_path

__all__ = [
    "AnswerBuilder",
    "HyperNodeBuilder",
    "JobBuilder",
    "JobPodBuilder",
    "NodeBuilder",
    "PodBuilder",
    "PodGroupBuilder",
    "QueueBuilder",
    "RawClusterBuilder",
    "ReviewBuilder",
    "TraceBuilder",
    "TraceJobBuilder",
    "cluster",
    "make_answer",
    "make_group",
    "make_hyper_node",
    "make_job",
    "make_job_pod",
    "make_node",
    "make_pod",
    "make_queue",
    "make_raw_cluster",
    "make_review",
    "make_trace",
    "make_trace_job",
    "running",
    "set_path",
    "waiting",
]


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {}, "annotations": {}},
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {}}
                ],
            },
        }

    def _requests(self) -> dict[str, str]:
        resources = self._pod["spec"]["containers"][0]["resources"]
        requests: dict[str, str] = resources.setdefault("requests", {})
        return requests

    def ns(self, namespace: str) -> Self:
        self._pod["metadata"]["namespace"] = namespace
        return self

    def cpu(self, quantity: str) -> Self:
        self._requests()["cpu"] = quantity
        return self

    def memory(self, quantity: str) -> Self:
        self._requests()["memory"] = quantity
        return self

    def request(self, resource: str, quantity: str) -> Self:
        self._requests()[resource] = quantity
        return self

    def container(self, **requests: str) -> Self:
        """One more app container with these requests (keyword names: cpu, memory)."""
        index = len(self._pod["spec"]["containers"])
        self._pod["spec"]["containers"].append(
            {"name": f"c{index}", "image": "pause", "resources": {"requests": requests}}
        )
        return self

    def init_container(self, *, sidecar: bool = False, **requests: str) -> Self:
        inits = self._pod["spec"].setdefault("initContainers", [])
        container: dict[str, Any] = {
            "name": f"init{len(inits)}",
            "image": "pause",
            "resources": {"requests": requests},
        }
        if sidecar:
            container["restartPolicy"] = "Always"
        inits.append(container)
        return self

    def overhead(self, **amounts: str) -> Self:
        self._pod["spec"]["overhead"] = amounts
        return self

    def pod_requests(self, **amounts: str) -> Self:
        self._pod["spec"]["resources"] = {"requests": amounts}
        return self

    def scheduler(self, name: str) -> Self:
        self._pod["spec"]["schedulerName"] = name
        return self

    def node_selector(self, key: str, value: str) -> Self:
        self._pod["spec"].setdefault("nodeSelector", {})[key] = value
        return self

    def tolerate(self, key: str, value: str, effect: str = "NoSchedule") -> Self:
        toleration = {"key": key, "operator": "Equal", "value": value, "effect": effect}
        self._pod["spec"].setdefault("tolerations", []).append(toleration)
        return self

    def tolerate_any(self, key: str, effect: str = "NoSchedule") -> Self:
        """Tolerates the taint `key` whatever its value (operator Exists)."""
        toleration = {"key": key, "operator": "Exists", "effect": effect}
        self._pod["spec"].setdefault("tolerations", []).append(toleration)
        return self

    def on(self, node: str) -> Self:
        self._pod["spec"]["nodeName"] = node
        return self

    def requires(self, key: str, operator: str, *values: str) -> Self:
        """A required node affinity expression (all of them in one node selector term)."""
        affinity = self._pod["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
        required = affinity.setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]}
        )
        term = required["nodeSelectorTerms"][0]
        term.setdefault("matchExpressions", []).append(
            {"key": key, "operator": operator, "values": list(values)}
        )
        return self

    def priority(self, value: int) -> Self:
        """For pure policy tests: as the apiserver sets it from the pod's PriorityClass."""
        self._pod["spec"]["priority"] = value
        return self

    def priority_class(self, name: str) -> Self:
        """For a real cluster: the apiserver sets the pod's priority from the class."""
        self._pod["spec"]["priorityClassName"] = name
        return self

    def owned_by(self, api_version: str, kind: str, name: str) -> Self:
        """A controller owns the pod (its controlling owner reference)."""
        owner = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}
        self._pod["metadata"].setdefault("ownerReferences", []).append(
            {**owner, "controller": True}
        )
        return self

    def gated(self, gate: str) -> Self:
        """A scheduling gate: the scheduler leaves the pod alone until the gate is removed."""
        self._pod["spec"].setdefault("schedulingGates", []).append({"name": gate})
        return self

    def phase(self, phase: str) -> Self:
        self._pod.setdefault("status", {})["phase"] = phase
        return self

    def parked(self) -> Self:
        """A scheduler found no node for it (PodScheduled False, reason Unschedulable)."""
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        self._pod.setdefault("status", {}).setdefault("conditions", []).append(condition)
        return self

    def uid(self, uid: str) -> Self:
        self._pod["metadata"]["uid"] = uid
        return self

    def deleting(self) -> Self:
        """Being deleted (a deletionTimestamp): it terminates, or waits for its finalizers."""
        self._pod["metadata"]["deletionTimestamp"] = "2026-11-26T12:00:00Z"
        return self

    def created(self, timestamp: str) -> Self:
        """`metadata.creationTimestamp` (RFC 3339), as the API server stamps it."""
        self._pod["metadata"]["creationTimestamp"] = timestamp
        return self

    def started(self, timestamp: str) -> Self:
        """Running since `timestamp` (RFC 3339): `status.startTime`, as the kubelet writes it."""
        status = self._pod.setdefault("status", {})
        status.update(phase="Running", startTime=timestamp)
        return self

    def deadline(self, seconds: int) -> Self:
        """`spec.activeDeadlineSeconds`: the kubelet ends the pod that long after its start."""
        self._pod["spec"]["activeDeadlineSeconds"] = seconds
        return self

    def label(self, key: str, value: str) -> Self:
        self._pod["metadata"]["labels"][key] = value
        return self

    def annotate(self, key: str, value: str) -> Self:
        self._pod["metadata"]["annotations"][key] = value
        return self

    def group(self, name: str, kind: GroupKind = GroupKind.VOLCANO) -> Self:
        """A member of group `name` of `kind`, joined the way that kind's pods join one."""
        if kind is GroupKind.COSCHEDULING:
            return self.label(COSCHEDULING_LABEL, name)
        if kind is GroupKind.NATIVE:
            self._pod["spec"]["schedulingGroup"] = {"podGroupName": name}
            return self
        return self.annotate(GROUP_ANNOTATION, name)

    def task(self, name: str) -> Self:
        return self.annotate(TASK_ANNOTATION, name)

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._pod)

    def model(self) -> Pod:
        """The pod as Lahar's policies see it. Without `.uid()`, the uid follows from the namespace
        and name, so building the same pod twice gives the same pod (as a relist would)."""
        body = self.build()
        meta = body["metadata"]
        meta.setdefault("uid", f"uid-{meta['namespace']}-{meta['name']}")
        return Pod.model_validate(body)


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._name = name
        self._allocatable: dict[str, str] = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        self._unschedulable = False
        self._labels = {"kubernetes.io/hostname": name}
        self._taints: list[dict[str, str]] = []

    def cpu(self, quantity: str) -> Self:
        self._allocatable["cpu"] = quantity
        return self

    def memory(self, quantity: str) -> Self:
        self._allocatable["memory"] = quantity
        return self

    def pods(self, count: int) -> Self:
        self._allocatable["pods"] = str(count)
        return self

    def offers(self, resource: str, quantity: str) -> Self:
        self._allocatable[resource] = quantity
        return self

    def cordoned(self) -> Self:
        self._unschedulable = True
        return self

    def label(self, key: str, value: str) -> Self:
        self._labels[key] = value
        return self

    def taint(self, key: str, effect: str = "NoSchedule", value: str = "") -> Self:
        self._taints.append({"key": key, "value": value, "effect": effect})
        return self

    def build(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"unschedulable": self._unschedulable}
        if self._taints:
            spec["taints"] = copy.deepcopy(self._taints)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self._name, "labels": dict(self._labels)},
            "spec": spec,
            "status": {"allocatable": dict(self._allocatable), "capacity": dict(self._allocatable)},
        }

    def model(self) -> Node:
        return Node.model_validate(self.build())


class PodGroupBuilder:
    def __init__(self, name: str) -> None:
        self._group: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 1},
        }

    def ns(self, namespace: str) -> Self:
        self._group["metadata"]["namespace"] = namespace
        return self

    def min_member(self, count: int) -> Self:
        self._group["spec"]["minMember"] = count
        return self

    def min_task(self, task: str, count: int) -> Self:
        self._group["spec"].setdefault("minTaskMember", {})[task] = count
        return self

    def min_resources(self, **amounts: str) -> Self:
        self._group["spec"]["minResources"] = {k.replace("_", "."): v for k, v in amounts.items()}
        return self

    def queue(self, name: str) -> Self:
        self._group["spec"]["queue"] = name
        return self

    def phase(self, phase: str) -> Self:
        self._group.setdefault("status", {})["phase"] = phase
        return self

    def created(self, timestamp: str) -> Self:
        """`metadata.creationTimestamp` (RFC 3339), as the API server stamps it."""
        self._group["metadata"]["creationTimestamp"] = timestamp
        return self

    def annotate(self, key: str, value: str) -> Self:
        self._group["metadata"].setdefault("annotations", {})[key] = value
        return self

    def network(self, mode: str = "hard", tier: int | None = 1, tier_name: str = "") -> Self:
        """`spec.networkTopology`: stay within one HyperNode of tier at most `tier`."""
        self._group["spec"]["networkTopology"] = _network(mode, tier, tier_name)
        return self

    def partitions(
        self, task: str, size: int, mode: str = "hard", tier: int | None = 1, minimum: int = 0
    ) -> Self:
        """A `subGroupPolicy` as the Job controller makes it for a task with a partitionPolicy:
        the task's pods split by `volcano.sh/partition-id`, each partition of `size` within one
        HyperNode of tier at most `tier`."""
        self._group["spec"].setdefault("subGroupPolicy", []).append(
            {
                "name": task,
                "subGroupSize": size,
                "minSubGroups": minimum,
                "labelSelector": {"matchLabels": {"volcano.sh/task-spec": task}},
                "matchLabelKeys": ["volcano.sh/partition-id"],
                "networkTopology": _network(mode, tier, ""),
            }
        )
        return self

    def set(self, path: str, value: Any) -> Self:
        """Any field by its path (`spec.minMember`), whatever its type: for malformed objects."""
        set_path(self._group, path, value)
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._group)

    def model(self, kind: GroupKind = GroupKind.VOLCANO) -> PodGroup:
        """The group as the gang engine sees it, read from an object of `kind` with the same
        minMember, minResources, queue and annotations (`kind_object`)."""
        if kind is GroupKind.COSCHEDULING:
            return CoschedulingPodGroup.model_validate(self.kind_object(kind)).as_gang()
        if kind is GroupKind.NATIVE:
            return NativePodGroup.model_validate(self.kind_object(kind)).as_gang()
        return PodGroup.model_validate(self.build())

    def kind_object(self, kind: GroupKind) -> dict[str, Any]:
        """This group as an object of `kind`, as its API serves it (a Coscheduling group names
        its queue by annotation; a native group has a gang policy and no minResources)."""
        body = self.build()
        if kind is GroupKind.VOLCANO:
            return body
        spec, meta = body.pop("spec"), body["metadata"]
        queue = spec.pop("queue", None)
        if queue is not None:
            meta.setdefault("annotations", {})[QUEUE_ANNOTATION] = queue
        if kind is GroupKind.COSCHEDULING:
            wanted = ("minMember", "minResources", "scheduleTimeoutSeconds")
            body.update(apiVersion=COSCHEDULING_API, spec={k: spec[k] for k in wanted if k in spec})
        else:
            gang = {"gang": {"minCount": spec.get("minMember", 1)}}
            body.update(apiVersion=NATIVE_API, spec={"schedulingPolicy": gang})
            if "priorityClassName" in spec:
                body["spec"]["priorityClassName"] = spec["priorityClassName"]
        body.pop("status", None)
        return body


def _network(mode: str, tier: int | None, tier_name: str) -> dict[str, Any]:
    wire: dict[str, Any] = {"mode": mode}
    if tier is not None:
        wire["highestTierAllowed"] = tier
    if tier_name:
        wire["highestTierName"] = tier_name
    return wire


class HyperNodeBuilder:
    """A HyperNode of tier 1; each member added by one selector (or by the selectors given, for
    malformed ones)."""

    def __init__(self, name: str) -> None:
        self._hyper_node: dict[str, Any] = {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {"tier": 1, "members": []},
        }

    def tier(self, tier: Any, name: str | None = None) -> Self:
        self._hyper_node["spec"]["tier"] = tier
        if name is not None:
            self._hyper_node["spec"]["tierName"] = name
        return self

    def label(self, key: str, value: str) -> Self:
        self._hyper_node["metadata"].setdefault("labels", {})[key] = value
        return self

    def member(self, kind: str = "Node", **selector: Any) -> Self:
        self._hyper_node["spec"]["members"].append({"type": kind, "selector": selector})
        return self

    def nodes(self, *names: str) -> Self:
        for name in names:
            self.member(exactMatch={"name": name})
        return self

    def hyper_nodes(self, *names: str) -> Self:
        for name in names:
            self.member("HyperNode", exactMatch={"name": name})
        return self

    def regex(self, pattern: str) -> Self:
        return self.member(regexMatch={"pattern": pattern})

    def labelled(self, kind: str = "Node", **labels: str) -> Self:
        return self.member(kind, labelMatch={"matchLabels": labels})

    def set(self, path: str, value: Any) -> Self:
        """Any field by its path, whatever its type: for malformed objects."""
        set_path(self._hyper_node, path, value)
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._hyper_node)

    def model(self) -> HyperNode:
        return HyperNode.model_validate(self.build())


def make_hyper_node(name: str) -> HyperNodeBuilder:
    return HyperNodeBuilder(name)


class QueueBuilder:
    def __init__(self, name: str) -> None:
        self._queue: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1},
        }

    def weight(self, weight: int) -> Self:
        self._queue["spec"]["weight"] = weight
        return self

    def capability(self, **amounts: str) -> Self:
        self._queue["spec"]["capability"] = amounts
        return self

    def deserved(self, **amounts: str) -> Self:
        self._queue["spec"]["deserved"] = amounts
        return self

    def guarantee(self, **amounts: str) -> Self:
        """`spec.guarantee.resource` (names with dots: `**{"nvidia.com/gpu": "1"}`)."""
        self._queue["spec"]["guarantee"] = {"resource": amounts}
        return self

    def reclaimable(self, value: bool) -> Self:
        self._queue["spec"]["reclaimable"] = value
        return self

    def annotate(self, key: str, value: str) -> Self:
        self._queue["metadata"].setdefault("annotations", {})[key] = value
        return self

    def parent(self, name: str) -> Self:
        """`spec.parent`: the queue it hangs under in the queue tree."""
        self._queue["spec"]["parent"] = name
        return self

    def set(self, path: str, value: Any) -> Self:
        """Any field by its path (`spec.weight`), whatever its type: for malformed objects."""
        set_path(self._queue, path, value)
        return self

    def state(self, state: str) -> Self:
        self._queue.setdefault("status", {})["state"] = state
        return self

    def counts(self, allocated: dict[str, str] | None = None, **counts: int) -> Self:
        """Status as written before: podgroup counts per phase and what was allocated."""
        status = self._queue.setdefault("status", {})
        status.update(counts)
        if allocated is not None:
            status["allocated"] = allocated
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._queue)

    def model(self) -> Queue:
        return Queue.model_validate(self.build())


def make_queue(name: str) -> QueueBuilder:
    return QueueBuilder(name)


def make_group(name: str) -> PodGroupBuilder:
    return PodGroupBuilder(name)


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def cluster(
    nodes: Iterable[NodeBuilder | Node], pods: Iterable[PodBuilder | Pod] = ()
) -> ClusterState:
    """A ClusterState holding these nodes and pods, as the informers would have filled it."""
    state = ClusterState()
    for node in nodes:
        state.upsert_node(node.model() if isinstance(node, NodeBuilder) else node)
    for pod in pods:
        state.upsert_pod(pod.model() if isinstance(pod, PodBuilder) else pod)
    return state


def running(
    state: ClusterState,
    name: str,
    nodes: list[str],
    *,
    cpu: str = "2",
    queue: str = "",
    priority: int = 0,
    min_member: int | None = None,
) -> None:
    """A gang `name` whose members run on `nodes` (one each), with its PodGroup."""
    for index, node in enumerate(nodes):
        pod = make_pod(f"{name}-{index}").cpu(cpu).group(name).priority(priority).on(node)
        state.upsert_pod(pod.phase("Running").model())
    group = make_group(name).min_member(len(nodes) if min_member is None else min_member)
    state.upsert_pod_group((group.queue(queue) if queue else group).model())


def waiting(
    state: ClusterState, name: str, size: int, *, cpu: str = "2", queue: str = "", priority: int = 0
) -> None:
    """A gang `name` of `size` pending members, with its PodGroup (minMember = size)."""
    for index in range(size):
        state.upsert_pod(
            make_pod(f"{name}-{index}").cpu(cpu).group(name).priority(priority).model()
        )
    group = make_group(name).min_member(size)
    state.upsert_pod_group((group.queue(queue) if queue else group).model())


class TraceJobBuilder:
    """A job of a `lahar simulate` trace, its fields as the trace's YAML spells them."""

    def __init__(self, name: str) -> None:
        self._job: dict[str, Any] = {"name": name, "tasks": []}

    def task(
        self,
        name: str = "worker",
        replicas: int = 1,
        *,
        cpu: str = "1",
        memory: str = "1Gi",
        duration: float = 60,
        **fields: Any,
    ) -> Self:
        """One more task (`fields`: its other fields by their YAML names)."""
        task = {"name": name, "replicas": replicas, "cpu": cpu, "memory": memory}
        self._job["tasks"].append({**task, "duration": duration, **fields})
        return self

    def bound(self, *nodes: str | None) -> Self:
        """The last task's pods by name, `JOB-TASK-INDEX`, each bound to its node at time 0
        (None: pending)."""
        task = self._job["tasks"][-1]
        task["pods"] = [
            {"name": f"{self._job['name']}-{task['name']}-{index}"}
            | ({} if node is None else {"node": node})
            for index, node in enumerate(nodes)
        ]
        return self

    def set(self, **fields: Any) -> Self:
        """Any of the job's fields, by its YAML name (`started=-60`, `minAvailable=2`)."""
        self._job.update(fields)
        return self

    def run_time(self, low: float, high: float, source: str = "annotation") -> Self:
        """Its estimated total run time, a range and the source it came from (`runTime`)."""
        self._job["runTime"] = {"low": low, "high": high, "source": source}
        return self

    def model(self) -> TraceJob:
        """The job alone, as `lahar whatif` asks about one (`simulate.job_input`)."""
        return TraceJob.model_validate(self.build())

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._job)


class TraceBuilder:
    """A `lahar simulate` trace: node groups, queues, jobs, occupied capacity."""

    def __init__(self) -> None:
        self._trace: dict[str, Any] = {"nodes": [], "jobs": []}

    def nodes(
        self, count: int | None = None, *, cpu: str = "4", memory: str = "8Gi", **fields: Any
    ) -> Self:
        """One more node group: `count` nodes, or those `names=[...]`, with its other fields
        (`labels`, `taints`, `unschedulable`, `pods`, `name`)."""
        group: dict[str, Any] = {"cpu": cpu, "memory": memory, **fields}
        if count is not None:
            group["count"] = count
        self._trace["nodes"].append(group)
        return self

    def queue(self, name: str, **fields: Any) -> Self:
        self._trace.setdefault("queues", []).append({"name": name, **fields})
        return self

    def job(self, job: TraceJobBuilder) -> Self:
        self._trace["jobs"].append(job.build())
        return self

    def write(self, path: Path) -> Path:
        """The trace as a YAML file at `path` (as `--save` writes a snapshot)."""
        path.write_text(yaml.safe_dump(self.build(), sort_keys=False), encoding="utf-8")
        return path

    def occupied(self, node: str, **amounts: Any) -> Self:
        """What other schedulers' pods take on `node` (cpu, memory, gpu, pods)."""
        self._trace.setdefault("occupied", []).append({"node": node, **amounts})
        return self

    def set(self, path: str, value: Any) -> Self:
        """Any field by its path (`takenAt`, `nodes[0].cpu`), whatever its type."""
        set_path(self._trace, path, value)
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._trace)

    def model(self) -> Trace:
        return parse_trace(self.build())


def make_trace() -> TraceBuilder:
    return TraceBuilder()


def make_trace_job(name: str) -> TraceJobBuilder:
    return TraceJobBuilder(name)


class RawClusterBuilder:
    """What a snapshot lists from the API server (`kube.snapshot_lists.RawCluster`), from the
    builders' objects as the API serves them: each pod, PodGroup and Job with a uid (a pod's from
    its namespace and name, as `PodBuilder.model` gives it; a Job's the one its PodGroup's name
    carries) unless it has one."""

    def __init__(self) -> None:
        self._lists: dict[str, list[dict[str, Any]]] = {}

    def _add(self, into: str, *items: dict[str, Any]) -> Self:
        self._lists.setdefault(into, []).extend(items)
        return self

    def nodes(self, *nodes: NodeBuilder) -> Self:
        return self._add("nodes", *(node.build() for node in nodes))

    def pods(self, *pods: PodBuilder) -> Self:
        bodies = [pod.build() for pod in pods]
        for body in bodies:
            meta = body["metadata"]
            meta.setdefault("uid", f"uid-{meta['namespace']}-{meta['name']}")
        return self._add("pods", *bodies)

    def group(self, group: PodGroupBuilder, kind: GroupKind = GroupKind.VOLCANO) -> Self:
        """A PodGroup of `kind` (`PodGroupBuilder.kind_object`)."""
        body = group.kind_object(kind)
        meta = body["metadata"]
        meta.setdefault("uid", f"uid-{kind.value}-{meta['namespace']}-{meta['name']}")
        into = {
            GroupKind.VOLCANO: "volcano_groups",
            GroupKind.COSCHEDULING: "coscheduling_groups",
            GroupKind.NATIVE: "native_groups",
        }[kind]
        return self._add(into, body)

    def queues(self, *queues: QueueBuilder) -> Self:
        return self._add("queues", *(queue.build() for queue in queues))

    def hyper_nodes(self, *hyper_nodes: HyperNodeBuilder) -> Self:
        return self._add("hyper_nodes", *(hyper.build() for hyper in hyper_nodes))

    def jobs(self, *jobs: JobBuilder) -> Self:
        """Volcano Jobs, each with its uid (its PodGroup is named `NAME-UID`)."""
        bodies = []
        for job in jobs:
            body = job.build()
            body["metadata"]["uid"] = job.model().metadata.uid
            bodies.append(body)
        return self._add("volcano_jobs", *bodies)

    def priority_class(self, name: str, value: int, *, global_default: bool = False) -> Self:
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": global_default,
        }
        return self._add("priority_classes", body)

    def batch_job(
        self, name: str, *, deadline: int, started: str, namespace: str = "default"
    ) -> Self:
        """A batch/v1 Job running since `started` (RFC 3339) with `activeDeadlineSeconds`; its
        pods name it with `PodBuilder.owned_by("batch/v1", "Job", name)`."""
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {"activeDeadlineSeconds": deadline, "template": {"spec": {}}},
            "status": {"startTime": started},
        }
        return self._add("batch_jobs", body)

    def build(self) -> RawCluster:
        def listed(into: str) -> list[dict[str, Any]]:
            return copy.deepcopy(self._lists.get(into, []))

        return RawCluster(
            nodes=listed("nodes"),
            pods=listed("pods"),
            priority_classes=listed("priority_classes"),
            volcano_groups=listed("volcano_groups"),
            coscheduling_groups=listed("coscheduling_groups"),
            native_groups=listed("native_groups"),
            queues=listed("queues"),
            hyper_nodes=listed("hyper_nodes"),
            volcano_jobs=listed("volcano_jobs"),
            batch_jobs=listed("batch_jobs"),
        )


def make_raw_cluster() -> RawClusterBuilder:
    return RawClusterBuilder()


class AnswerBuilder:
    """An answer of `lahar whatif` (`simulate.whatif.Answer`), for the words that say it: the
    Job starts now, on no node named, until told otherwise."""

    def __init__(self, job: str) -> None:
        self._fields: dict[str, Any] = {
            "job": job,
            "start": 0.0,
            "low": 0.0,
            "high": 0.0,
            "nodes": (),
            "hyper_node": None,
            "blockers": (),
            "victims": (),
            "knock_on": (),
            "delays": (),
            "reasons": (),
            "stuck": False,
            "horizon": HORIZON,
        }

    def starts(self, at: float, low: float | None = None, high: float | None = None) -> Self:
        """It starts `at` seconds from the snapshot, within [low, high] (default: exactly)."""
        self._fields.update(
            start=at, low=at if low is None else low, high=at if high is None else high
        )
        return self

    def on(self, *nodes: str, hyper_node: str | None = None) -> Self:
        self._fields.update(nodes=nodes, hyper_node=hyper_node)
        return self

    def after(
        self, job: str, ended: float, low: float, high: float, source: str = "annotation"
    ) -> Self:
        """One more gang it waits for, ending `ended` in the run, within [low, high]."""
        self._fields["blockers"] += (Blocker(job, ended, low, high, source),)
        return self

    def never(self, *reasons: str, stuck: bool = True, horizon: float | None = None) -> Self:
        """It does not start: never with the policy (`stuck`), or not within `horizon`."""
        self._fields.update(start=None, low=None, high=None, nodes=(), reasons=reasons)
        self._fields.update(stuck=stuck)
        if horizon is not None:
            self._fields["horizon"] = horizon
        return self

    def evicts(self, *victims: str, knock_on: tuple[str, ...] = ()) -> Self:
        self._fields.update(victims=victims, knock_on=knock_on)
        return self

    def delays(self, job: str, before: float | None, after: float | None) -> Self:
        self._fields["delays"] += (Delay(job, before, after),)
        return self

    def build(self) -> Answer:
        return Answer(**self._fields)


def make_answer(job: str) -> AnswerBuilder:
    return AnswerBuilder(job)
