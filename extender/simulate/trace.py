"""A job trace for `lahar simulate`: the cluster, its queues and the jobs that arrive over time.

A trace is data (YAML or JSON), validated like the policy: an error names the field and why.

    apiVersion: lahar.io/v1alpha1
    kind: Trace
    nodes:                       # groups of identical nodes
      - {count: 2, cpu: "8", memory: 32Gi}
    queues:                      # the default queue (weight 1) exists unless listed
      - {name: research, weight: 3}
      - {name: ml, weight: 2}
      - {name: team-a, weight: 2, parent: ml}   # a tree: ml's share goes 2:1 to its children
      - {name: team-b, weight: 1, parent: ml, capability: {cpu: "4"}}
    jobs:
      - name: tf-a
        arrival: 0               # seconds from the start
        queue: research          # a leaf queue: one no queue names as parent
        priority: 0              # a PriorityClass value; higher goes first in its queue
        preemptable: true        # false: never evicted (its PodGroup's volcano.sh/preemptable)
        minAvailable: 6          # default: every replica
        tasks:
          - {name: ps, replicas: 1, cpu: "1", memory: 1Gi, duration: 60}
          - {name: worker, replicas: 5, cpu: "2", memory: 2Gi, duration: 60}
    topology:                    # optional: the network, as Volcano's HyperNodes
      switchSize: 4              # tier 1 (`switch`): the nodes in blocks of 4, in node order
      spineSize: 4               # tier 2 (`spine`): the switches in blocks of 4
      # or, instead, the HyperNodes one by one (a member is a node or a lower-tier HyperNode):
      # hyperNodes:
      #   - {name: s0, tier: 1, tierName: switch, nodes: [node-0, node-1]}
      #   - {name: top, tier: 2, hyperNodes: [s0, s1]}
    autoscaling:                 # optional: the nodes above are the starting nodes of a pool
      nodes: {cpu: "8", memory: 32Gi}   # each node the autoscaler adds (gpu too, if any)
      maxNodes: 16               # the most nodes added beyond the starting ones, at once
      provisioningDelay: 120     # seconds from buying a node to its joining the cluster
      scaleDownAfter: 600        # seconds an added node stays with no pod (default 600)
      name: scaled               # added nodes are scaled-0, scaled-1... (default scaled)

A job may ask to stay within one HyperNode, as a Volcano Job does: `networkTopology: {mode:
hard, highestTierAllowed: 1}` (or `highestTierName: switch`; mode `soft` prefers it, `hard` waits
for it), and a task may be cut into partitions, each a sub-group that stays within its own tier:
`partitionPolicy: {totalPartitions: 2, partitionSize: 4, networkTopology: {...}}` (the partitions
times their size are the task's replicas). Either needs the trace's `topology`; a
highestTierName names a tier the topology has. The topology is a forest: a node or a HyperNode is
the member of one HyperNode at most, and a HyperNode's members are of lower tiers.

A task's pods run for `duration` seconds once the job has started, that is once `minAvailable`
of its pods run at the same time (a distributed training job makes no progress before that).
Queues form a tree by `parent` as Volcano's do by `spec.parent`: a queue naming none (or
`root`) is a top-level one, under the implicit `root`, which the trace does not list. A parent is
a queue of the trace (`default` included), the parents lead up to root without a loop, and jobs go
in leaf queues only: the core would never admit a job in a queue with children.
An autoscaled pool (`autoscaling`) grows from the trace's nodes by nodes of its template, up to
`maxNodes` added, and loses an added node that had no pod for `scaleDownAfter` seconds (never a
starting one); `simulate.autoscaler` plays the autoscaler. Its name is not a node group's, and a
trace with a topology cannot autoscale (an added node would be under no HyperNode).

A trace may also stand for a running cluster at one moment (`takenAt`, the time virtual time 0
stands for, shown in reports only). Nodes may be named one by one (`names`, DNS subdomains,
instead of `count` and `name`) and carry `labels`, `taints`, `unschedulable` (cordoned) and
`pods` (how many pods the node allows, 110 by default). A queue may carry Volcano's `guarantee`,
`deserved`, `priority` and `state` (Open or Closed). A job may live in its own `namespace`
(default `sim`; job names are unique per namespace and are DNS subdomains), be a PodGroup of
another `kind` (`coscheduling`: scheduler-plugins', whose `gatherTimeout` is its
scheduleTimeoutSeconds; `native`: Kubernetes' own; `volcano` by default), name its
`priorityClass` (for display: `priority` is the value), and give its estimated total run time as
a range with its source (`runTime: {low, high, source}`, each task's `duration` within it). A
task may ask for a per-task minimum (`minAvailable`, Volcano's minTaskMember), carry a pod's
`nodeSelector`, `tolerations` and `affinity` (nodeAffinity, as a pod spec writes them, checked
by building the pod: kube-scheduler's in-tree filters honour them in the simulation) and name its
pods (`pods: [{name, node}]`, one per replica; `node`: bound there at time 0). A job that had
started before time 0 says when (`started`, seconds, at most 0), and at least minAvailable of
its pods name their node; it is resumed, not replayed. `occupied` lists, per node, what running
pods Lahar does not schedule take there (DaemonSets, other schedulers), held for the whole run:

    takenAt: "2026-11-29T10:00:00Z"
    nodes:
      - {names: [gpu-a, gpu-b], cpu: "64", memory: 512Gi, gpu: 8,
         labels: {pool: gpu}, taints: [{key: gpu, effect: NoSchedule}]}
    occupied:
      - {node: gpu-a, cpu: 500m, memory: 1Gi, pods: 3}
    jobs:
      - name: train.v2
        namespace: ml
        kind: coscheduling
        started: -1800           # running for half an hour at time 0
        runTime: {low: 3600, high: 7200, source: history}
        tasks:
          - name: worker
            replicas: 2
            cpu: "32"
            memory: 128Gi
            duration: 5400       # in total, from its start: 3,600 s are left at time 0
            tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
            pods: [{name: train-w-0, node: gpu-a}, {name: train-w-1, node: gpu-b}]

Every one of these fields is optional: a trace without them is played exactly as before.

A job joins a valid trace by `Trace.with_job` (`lahar whatif` adds the Job it asks about so):
checked by the rules the validator checks each job by, in one place for both (`_Roster`), and
the rest of the trace not again. Pure: no I/O but reading the file it is given.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from extender.admission.names import label_value, qualified_name
from extender.api.batch import pod_name
from extender.api.quantity import parse_quantity
from extender.api.resources import Resources
from extender.api.scheduling import DEFAULT_QUEUE, ROOT, GroupKind
from extender.api.topology import DNS_SUBDOMAIN
from extender.api.wire import describe_invalid
from extender.framework.engine import QueueTree
from extender.simulate.pod_constraints import check_constraints

NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a DNS label, as Volcano's queue names are
DEFAULT_NAMESPACE = "sim"  # the namespace of a job that names none (`world.NAMESPACE`)
KINDS = {  # a job's `kind` -> the kind of PodGroup it is
    "volcano": GroupKind.VOLCANO,
    "coscheduling": GroupKind.COSCHEDULING,
    "native": GroupKind.NATIVE,
}


def _checked(value: str | int | float) -> str | int | float:
    if parse_quantity(value) < 0:  # (a ValueError names what else is wrong with it)
        raise ValueError(f"must not be negative, got {value!r}")
    return value


def _some(value: tuple[T, ...]) -> tuple[T, ...]:
    # (checked once the items are valid: a bad item is one error, not also "too few items")
    if not value:
        raise ValueError("needs at least one")
    return value


def _valid(check: Callable[[str], str | None]) -> Callable[[str], str]:
    """A validator that refuses a string `check` finds a reason against, with that reason."""

    def valid(value: str) -> str:
        reason = check(value)
        if reason is not None:
            raise ValueError(f"{value!r} {reason}")
        return value

    return valid


def _rfc3339(value: str) -> str:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(f"{value!r} is not an RFC 3339 time (e.g. 2026-11-29T10:00:00Z)")
    return value


Quantity = Annotated[str | int | float, AfterValidator(_checked)]
# An object name (a node's, a pod's, a job's): an RFC 1123 subdomain, as the API server wants it.
Subdomain = Annotated[str, Field(pattern=DNS_SUBDOMAIN, min_length=1, max_length=253)]
LabelKey = Annotated[str, AfterValidator(_valid(qualified_name))]
LabelValue = Annotated[str, AfterValidator(_valid(label_value))]
Labels = dict[LabelKey, LabelValue]
T = TypeVar("T")


class TraceError(Exception):
    """The trace cannot be used; the message names the file, the field and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,  # (an arrival or a duration of .inf would never come or end)
    )


class _Amounts(_Strict):
    """cpu, memory and GPUs (nvidia.com/gpu): what a node group has, what a task's pod asks."""

    cpu: Quantity
    memory: Quantity
    gpu: Quantity | None = None

    @cached_property
    def resources(self) -> Resources:
        quantities: dict[str, str | int | float] = {"cpu": self.cpu, "memory": self.memory}
        if self.gpu is not None:
            quantities["nvidia.com/gpu"] = self.gpu
        return Resources.parse(quantities)


class NodeShape(_Amounts):
    """What one node offers: a node group's nodes, or each node an autoscaled pool adds."""

    @model_validator(mode="after")
    def _has_cpu(self) -> NodeShape:
        if self.resources["cpu"] <= 0:  # (utilisation is cpu over the cluster's cpu)
            raise ValueError(f"cpu: a node needs some cpu, got {self.cpu!r}")
        return self

    @property
    def allocatable(self) -> Resources:
        return self.resources


class TraceTaint(_Strict):
    """A node's taint: pods that do not tolerate it are kept off the node (NoSchedule,
    NoExecute) or placed there last (PreferNoSchedule, a score the simulation leaves out)."""

    key: LabelKey
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeGroup(NodeShape):
    """Identical nodes: `count` of them named `<name>-<index>`, or those `names`."""

    count: int | None = Field(default=None, ge=1)
    name: str = Field(default="node", pattern=NAME)  # nodes are named <name>-<index>
    names: tuple[Subdomain, ...] = ()
    labels: Labels = Field(default_factory=dict)
    taints: tuple[TraceTaint, ...] = ()
    unschedulable: bool = False  # cordoned: no new pod goes there
    pods: int = Field(default=110, ge=1)  # the pods the node allows (the kubelet's default)

    @model_validator(mode="after")
    def _one_way(self) -> NodeGroup:
        if self.names and self.count is not None:
            raise ValueError("give count (nodes <name>-<index>) or names, not both")
        if self.names and "name" in self.model_fields_set:
            raise ValueError(
                "name: the prefix of counted nodes' names; a group with names needs none"
            )
        if not self.names and self.count is None:
            raise ValueError("give count (nodes <name>-<index>) or names (the nodes one by one)")
        if len(set(self.names)) != len(self.names):
            repeated = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ValueError(f"names: {', '.join(repeated)} listed more than once")
        return self

    @property
    def size(self) -> int:
        """How many nodes the group has."""
        return len(self.names) or (self.count or 0)

    @property
    def node_names(self) -> list[str]:
        """Its nodes' names: the names given, else `<name>-<index>`."""
        if self.names:
            return list(self.names)
        return [f"{self.name}-{index}" for index in range(self.count or 0)]


class Autoscaling(_Strict):
    """An autoscaled node pool: the trace's nodes are its starting nodes; the autoscaler adds
    nodes of shape `nodes`, at most `max_nodes` of them at once beyond the starting ones, each
    joining the cluster `provisioning_delay` seconds after it was bought, and removes an added
    node that had no pod for `scale_down_after` seconds (Cluster Autoscaler's
    scale-down-unneeded-time, 10 minutes by default)."""

    nodes: NodeShape
    max_nodes: int = Field(ge=1)
    provisioning_delay: float = Field(ge=0)
    scale_down_after: float = Field(default=600.0, gt=0)
    name: str = Field(default="scaled", pattern=NAME)  # added nodes are <name>-<number>


class TraceQueue(_Strict):
    name: str = Field(pattern=NAME)
    weight: int = Field(default=1, ge=1)
    capability: dict[str, Quantity] = Field(default_factory=dict)
    reclaimable: bool = True
    parent: str | None = Field(default=None, pattern=NAME)  # None or root: a top-level queue
    # Volcano's Queue fields, as its spec has them (the state as its status shows it).
    guarantee: dict[str, Quantity] = Field(default_factory=dict)  # held for it, used or not
    deserved: dict[str, Quantity] = Field(default_factory=dict)  # its share, where given
    priority: int = Field(default=0, ge=0)  # higher goes first, and is reclaimed from last
    state: Literal["Open", "Closed"] = "Open"  # a Closed queue admits no new work

    @property
    def parent_name(self) -> str | None:
        """Its parent queue in the trace; None at the top level."""
        return None if self.parent in (None, ROOT) else self.parent


class TraceNetworkTopology(_Strict):
    """How far apart a job's (or a partition's) pods may be: within one HyperNode of tier
    highestTierAllowed (or of the tier named highestTierName) at most; `hard` waits for it,
    `soft` prefers it."""

    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: int | None = Field(default=None, ge=1)
    highest_tier_name: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_tier(self) -> TraceNetworkTopology:
        given = (self.highest_tier_allowed is not None) + (self.highest_tier_name is not None)
        if given != 1:
            raise ValueError(
                "give highestTierAllowed or highestTierName, not both"
                if given
                else "needs highestTierAllowed or highestTierName"
            )
        return self


class PartitionPolicy(_Strict):
    """A task's pods cut into `totalPartitions` partitions of `partitionSize` (replicas 0 to
    size - 1 the first, as Volcano's controller cuts them), each within its networkTopology."""

    total_partitions: int = Field(ge=1)
    partition_size: int = Field(ge=1)
    network_topology: TraceNetworkTopology | None = None


class TracePod(_Strict):
    """One of a task's pods by name; `node`: bound there at time 0."""

    name: Subdomain
    node: Subdomain | None = None


class Task(_Amounts):
    name: str = Field(pattern=NAME)
    replicas: int = Field(ge=1)
    duration: float = Field(gt=0)  # seconds each pod runs once the job has started
    partition_policy: PartitionPolicy | None = None
    min_available: int | None = Field(default=None, ge=0)  # Volcano's minTaskMember
    node_selector: Labels = Field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()  # as a pod spec writes them
    affinity: dict[str, Any] | None = None  # as a pod spec writes it: nodeAffinity only
    pods: tuple[TracePod, ...] = ()  # its pods by name (default: JOB-TASK-INDEX)

    @property
    def request(self) -> Resources:
        return self.resources

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        policy = self.partition_policy
        if policy is not None and policy.total_partitions * policy.partition_size != self.replicas:
            raise ValueError(
                f"partitionPolicy: totalPartitions * partitionSize is {policy.total_partitions} "
                f"* {policy.partition_size} = {policy.total_partitions * policy.partition_size}, "
                f"not the task's {self.replicas} replicas"
            )
        if self.min_available is not None and self.min_available > self.replicas:
            raise ValueError(
                f"minAvailable {self.min_available} is more than the task's {self.replicas} "
                "replicas"
            )
        if self.pods and len(self.pods) != self.replicas:
            raise ValueError(
                f"pods: {len(self.pods)} named for the task's {self.replicas} replicas "
                "(one per replica)"
            )
        check_constraints(self.constraints)
        return self

    @cached_property
    def constraints(self) -> dict[str, Any]:
        """Its pods' nodeSelector, tolerations and affinity, as a pod spec has them (only those
        given)."""
        spec: dict[str, Any] = {}
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            spec["tolerations"] = [dict(toleration) for toleration in self.tolerations]
        if self.affinity is not None:
            spec["affinity"] = self.affinity
        return spec

    def partition_of(self, index: int) -> int | None:
        """The partition of the task's pod `index`; None without a partition policy."""
        policy = self.partition_policy
        return None if policy is None else index // policy.partition_size


class TraceHyperNode(_Strict):
    """One HyperNode: its tier (1 the nearest) and its members, nodes and lower-tier
    HyperNodes."""

    name: Subdomain
    tier: int = Field(ge=1)
    tier_name: str | None = Field(default=None, min_length=1)
    nodes: tuple[str, ...] = ()
    hyper_nodes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _has_members(self) -> TraceHyperNode:
        if not self.nodes and not self.hyper_nodes:
            raise ValueError("a HyperNode needs members: nodes, hyperNodes or both")
        return self


SWITCH, SPINE = "switch", "spine"  # the tier names of the HyperNodes switchSize and spineSize make


class TraceTopology(_Strict):
    """The network: switches over blocks of `switchSize` nodes (and spines over blocks of
    `spineSize` switches), or the HyperNodes listed."""

    switch_size: int | None = Field(default=None, ge=1)
    spine_size: int | None = Field(default=None, ge=1)
    hyper_nodes: tuple[TraceHyperNode, ...] = ()

    @model_validator(mode="after")
    def _one_way(self) -> TraceTopology:
        if self.switch_size is None and not self.hyper_nodes:
            raise ValueError("give switchSize (and spineSize) or hyperNodes")
        if self.switch_size is not None and self.hyper_nodes:
            raise ValueError("give switchSize (and spineSize) or hyperNodes, not both")
        if self.spine_size is not None and self.switch_size is None:
            raise ValueError("spineSize groups switches: it needs switchSize")
        return self

    def resolved(self, nodes: list[str]) -> tuple[TraceHyperNode, ...]:
        """The HyperNodes, those of switchSize and spineSize made over `nodes` (in order):
        switch-0, switch-1... and spine-0, spine-1..."""
        if self.switch_size is None:
            return self.hyper_nodes
        size = self.switch_size
        switches = tuple(
            TraceHyperNode(
                name=f"{SWITCH}-{number}",
                tier=1,
                tier_name=SWITCH,
                nodes=tuple(nodes[start : start + size]),
            )
            for number, start in enumerate(range(0, len(nodes), size))
        )
        if self.spine_size is None:
            return switches
        names, size = [switch.name for switch in switches], self.spine_size
        spines = tuple(
            TraceHyperNode(
                name=f"{SPINE}-{number}",
                tier=2,
                tier_name=SPINE,
                hyper_nodes=tuple(names[start : start + size]),
            )
            for number, start in enumerate(range(0, len(names), size))
        )
        return switches + spines


class RunTime(_Strict):
    """A job's estimated total run time, from its start: a range and where it came from."""

    low: float = Field(ge=0)
    high: float
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> RunTime:
        if self.high < self.low:
            raise ValueError(f"high: {self.high:g} is below low {self.low:g}")
        return self


class TraceJob(_Strict):
    name: Subdomain
    namespace: str = Field(default=DEFAULT_NAMESPACE, pattern=NAME, max_length=63)
    kind: Literal["volcano", "coscheduling", "native"] = "volcano"
    arrival: float = Field(default=0.0, ge=0)
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    priority_class: Subdomain | None = None  # its PriorityClass's name, shown; `priority` decides
    preemptable: bool = True
    min_available: int | None = Field(default=None, ge=1)
    gather_timeout: float | None = Field(default=None, gt=0)  # Coscheduling's scheduleTimeout...
    network_topology: TraceNetworkTopology | None = None
    run_time: RunTime | None = None
    started: float | None = Field(default=None, le=0)  # before time 0: it runs at time 0
    tasks: Annotated[tuple[Task, ...], AfterValidator(_some)]

    @property
    def key(self) -> str:
        """How the simulation's outcome names the job: its name in the default namespace,
        `namespace/name` in another."""
        if self.namespace == DEFAULT_NAMESPACE:
            return self.name
        return f"{self.namespace}/{self.name}"

    @property
    def group_kind(self) -> GroupKind:
        return KINDS[self.kind]

    @property
    def gang_key(self) -> str:
        """Its PodGroup's gang key (`GroupKind.key`)."""
        return self.group_kind.key(self.namespace, self.name)

    @property
    def placed(self) -> int:
        """How many of its pods are bound at time 0."""
        return sum(1 for task in self.tasks for pod in task.pods if pod.node is not None)

    @property
    def in_progress(self) -> bool:
        """It runs at time 0, or has pods bound then: it is taken up where the snapshot left
        it, not replayed from its arrival."""
        return self.started is not None or self.placed > 0

    def bound_nodes(self) -> list[str | None]:
        """Each pod's node at time 0 (None: pending), in the order of `pods`."""
        return [
            task.pods[index].node if task.pods else None
            for task in self.tasks
            for index in range(task.replicas)
        ]

    @cached_property
    def task_minimums(self) -> dict[str, int]:
        """Each task's minAvailable, where given (Volcano's minTaskMember)."""
        return {t.name: t.min_available for t in self.tasks if t.min_available is not None}

    def stands(self, running: Counter[str]) -> bool:
        """Whether pods running, counted per task, are enough for the job to start."""
        if sum(running.values()) < self.minimum:
            return False
        return all(running[task] >= wanted for task, wanted in self.task_minimums.items())

    @property
    def size(self) -> int:
        return sum(task.replicas for task in self.tasks)

    @property
    def minimum(self) -> int:
        return self.min_available if self.min_available is not None else self.size

    @model_validator(mode="after")
    def _consistent(self) -> TraceJob:
        if self.min_available is not None and self.min_available > self.size:
            raise ValueError(
                f"minAvailable {self.min_available} is more than the job's {self.size} pods"
            )
        names = [task.name for task in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names repeat: {', '.join(names)}")
        self._check_kind()
        self._check_running()
        return self

    def _check_kind(self) -> None:
        """What the job asks of its PodGroup, its kind has."""
        if self.kind != "volcano":
            for index, task in enumerate(self.tasks):
                if task.min_available is not None:
                    raise ValueError(
                        f"tasks.{index}.minAvailable: a {self.kind} PodGroup has no per-task "
                        "minimum (minTaskMember is Volcano's)"
                    )
            for where, _ in self.topologies:
                raise ValueError(
                    f"{where}: a {self.kind} PodGroup has no network topology (Volcano's has)"
                )
        if self.gather_timeout is not None and self.kind != "coscheduling":
            raise ValueError(
                f"gatherTimeout: a {self.kind} PodGroup has no scheduleTimeoutSeconds (a "
                "coscheduling one has)"
            )

    def _check_running(self) -> None:
        """A job running at time 0 was there at time 0, has minAvailable pods bound, and its
        run time range holds each task's duration."""
        if self.in_progress and self.arrival != 0:
            what = "started" if self.started is not None else "has pods bound at time 0"
            raise ValueError(
                f"arrival: the job {what}, so it is there from time 0, not {self.arrival:g}"
            )
        if self.started is not None and self.placed < self.minimum:
            raise ValueError(
                f"started: a started job has at least minAvailable ({self.minimum}) pods bound, "
                f"with a node in tasks.N.pods; {self.placed} are"
            )
        if self.run_time is not None:
            low, high = self.run_time.low, self.run_time.high
            for index, task in enumerate(self.tasks):
                if not low <= task.duration <= high:
                    raise ValueError(
                        f"tasks.{index}.duration: {task.duration:g} is outside runTime "
                        f"[{low:g}, {high:g}]"
                    )

    def pod_names(self) -> Iterator[tuple[Task, str]]:
        """Each pod's task and name (`pods`)."""
        for task, _, name in self.pods():
            yield task, name

    def pods(self) -> Iterator[tuple[Task, int, str]]:
        """Each pod's task, index in it and name: the task's pods' names where it gives them,
        else as Volcano's controller names them (`pod_name`)."""
        for task in self.tasks:
            for index in range(task.replicas):
                if task.pods:
                    yield task, index, task.pods[index].name
                else:
                    yield task, index, pod_name(self.name, task.name, index)

    @property
    def topologies(self) -> Iterator[tuple[str, TraceNetworkTopology]]:
        """Its network topologies, each with the field that gives it: the job's, then each
        partitioned task's."""
        if self.network_topology is not None:
            yield "networkTopology", self.network_topology
        for index, task in enumerate(self.tasks):
            policy = task.partition_policy
            if policy is not None and policy.network_topology is not None:
                yield f"tasks.{index}.partitionPolicy.networkTopology", policy.network_topology


class Occupied(_Amounts):
    """What running pods Lahar does not schedule take on one node (DaemonSets, pods of other
    schedulers): held there for the whole run."""

    node: Subdomain
    cpu: Quantity = 0
    memory: Quantity = 0
    pods: int = Field(default=1, ge=1)


def job_key(gang_key: str) -> str:
    """The `TraceJob.key` of the job whose PodGroup has this gang key (`GroupKind.key`: a job's
    name is unique in its namespace, whatever its kind)."""
    namespace, _, rest = gang_key.partition("/")
    name = rest.rpartition("/")[2]
    return name if namespace == DEFAULT_NAMESPACE else f"{namespace}/{name}"


JobRule = Literal["queue", "name", "pod", "node", "topology"]


@dataclass(frozen=True)
class JobRefusal:
    """Why a trace cannot take a job: the field at fault (`jobs.N...`), what is wrong with it,
    and the rule it breaks: `queue` (not a leaf queue of the trace), `name` (a job of its name
    is in its namespace), `pod` (so is a pod of one of its pods' names: `pod`, of job `other`),
    `node` (a pod bound to a node the trace lacks) or `topology` (a tier the trace lacks)."""

    field: str
    reason: str
    rule: JobRule
    pod: str | None = None
    other: str | None = None

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


class JobRefused(TraceError):
    """`Trace.with_job`: the trace cannot take the job; `refusal` says why."""

    def __init__(self, refusal: JobRefusal) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


class _Roster:
    """What each of a trace's jobs is checked against, in the trace's order: the trace's queues,
    nodes and tiers, and the names the jobs before it took, theirs and their pods'. The one
    check of a job, for the trace's validator and for `Trace.with_job`."""

    def __init__(self, trace: Trace) -> None:
        self.queues = {queue.name for queue in trace.queues} | {DEFAULT_QUEUE}
        self.children = trace.children
        self.nodes = set(trace.node_names)
        self.topology = trace.topology is not None
        self.tiers = trace.tier_names
        self.jobs: set[tuple[str, str]] = set()  # (namespace, name)
        # (namespace, pod) -> its job, and the field that names it (None: JOB-TASK-INDEX)
        self.pods: dict[tuple[str, str], tuple[str, str | None]] = {}

    def note(self, index: int, job: TraceJob) -> None:
        """Take the trace's `index`th job in unchecked (the trace was checked)."""
        self.jobs.add((job.namespace, job.name))
        for pod, named in _pod_names(index, job):
            self.pods.setdefault((job.namespace, pod), (job.name, named))

    def take(self, index: int, job: TraceJob) -> JobRefusal | None:
        """Check the trace's `index`th job against the jobs before it and the trace, and take
        it in: None, or why the trace cannot hold it (the first rule it breaks)."""
        return (
            self._queue(index, job)
            or self._name(index, job)
            or self._pods(index, job)
            or self._bound(index, job)
            or self._topologies(index, job)
        )

    def _queue(self, index: int, job: TraceJob) -> JobRefusal | None:
        """Jobs go in leaf queues of the trace."""
        at = f"jobs.{index}.queue"
        if job.queue not in self.queues:
            known = ", ".join(sorted(self.queues))
            return JobRefusal(at, f"queue {job.queue!r} is not in queues (known: {known})", "queue")
        if job.queue in self.children:
            kids = ", ".join(self.children[job.queue])
            return JobRefusal(
                at, f"queue {job.queue} has child queues ({kids}): jobs go in leaf queues", "queue"
            )
        return None

    def _name(self, index: int, job: TraceJob) -> JobRefusal | None:
        """A namespace holds one job of a name."""
        key = (job.namespace, job.name)
        if key in self.jobs:
            where = "" if job.namespace == DEFAULT_NAMESPACE else f" in {job.namespace}"
            return JobRefusal(
                f"jobs.{index}.name", f"job {job.name!r} is listed twice{where}", "name"
            )
        self.jobs.add(key)
        return None

    def _pods(self, index: int, job: TraceJob) -> JobRefusal | None:
        """A namespace holds one pod of a name."""
        for pod, named in _pod_names(index, job):
            key = (job.namespace, pod)
            if key not in self.pods:
                self.pods[key] = (job.name, named)
                continue
            other, there = self.pods[key]
            if named is None and there is None:
                return JobRefusal(
                    f"jobs.{index}.name",
                    f"job {job.name!r} would make pod {pod!r}, which job {other!r} makes too "
                    "(pods are named JOB-TASK-INDEX, as Volcano names them); rename one of them",
                    "pod",
                    pod,
                    other,
                )
            return JobRefusal(
                named or f"jobs.{index}.name",
                f"pod {pod!r} is a pod of job {other!r} too ({there or 'named JOB-TASK-INDEX'}); "
                "a namespace holds one pod of a name",
                "pod",
                pod,
                other,
            )
        return None

    def _bound(self, index: int, job: TraceJob) -> JobRefusal | None:
        """Pods bound at time 0 are on nodes of the trace (its starting nodes)."""
        for number, task in enumerate(job.tasks):
            for replica, pod in enumerate(task.pods):
                if pod.node is not None and pod.node not in self.nodes:
                    return JobRefusal(
                        f"jobs.{index}.tasks.{number}.pods.{replica}.node",
                        f"{pod.node!r} is not a node of the trace",
                        "node",
                    )
        return None

    def _topologies(self, index: int, job: TraceJob) -> JobRefusal | None:
        """A job's network topologies name tiers the trace has."""
        for where, asked in job.topologies:
            at = f"jobs.{index}.{where}"
            if not self.topology:
                return JobRefusal(at, "the trace has no topology to stay within", "topology")
            name = asked.highest_tier_name
            if name is not None and name not in self.tiers:
                known = ", ".join(sorted(self.tiers)) or "none: no HyperNode names its tier"
                return JobRefusal(
                    f"{at}.highestTierName",
                    f"no HyperNode has tier {name!r} (known: {known})",
                    "topology",
                )
        return None


def _pod_names(index: int, job: TraceJob) -> Iterator[tuple[str, str | None]]:
    """The pods' names of the trace's `index`th job, each with the field that names it (None:
    named JOB-TASK-INDEX, which a job's own pods never share)."""
    for number, task in enumerate(job.tasks):
        for replica in range(task.replicas):
            if task.pods:
                yield task.pods[replica].name, f"jobs.{index}.tasks.{number}.pods.{replica}.name"
            else:
                yield pod_name(job.name, task.name, replica), None


class Trace(_Strict):
    api_version: Literal["lahar.io/v1alpha1"] = "lahar.io/v1alpha1"
    kind: Literal["Trace"] = "Trace"
    taken_at: Annotated[str, AfterValidator(_rfc3339)] | None = None  # what time 0 stands for
    nodes: Annotated[tuple[NodeGroup, ...], AfterValidator(_some)]
    queues: tuple[TraceQueue, ...] = ()
    jobs: tuple[TraceJob, ...] = ()
    topology: TraceTopology | None = None
    autoscaling: Autoscaling | None = None
    occupied: tuple[Occupied, ...] = ()
    # The cluster's PriorityClasses, name -> value: what a Job asked about (`lahar whatif -f`)
    # that names one gets as its priority; and the one marked globalDefault, which the API
    # server gives a pod that names none.
    priority_classes: dict[Subdomain, int] = Field(default_factory=dict)
    default_priority_class: Subdomain | None = None

    @model_validator(mode="after")
    def _references(self) -> Trace:
        self._check_tree()
        self._check_nodes()
        if self.topology is not None:
            self._forest(self.topology.hyper_nodes)
        roster = _Roster(self)
        for index, job in enumerate(self.jobs):
            refusal = roster.take(index, job)
            if refusal is not None:
                raise ValueError(str(refusal))
        self._check_occupied()
        self._check_pool()
        default = self.default_priority_class
        if default is not None and default not in self.priority_classes:
            known = ", ".join(sorted(self.priority_classes)) or "none"
            raise ValueError(
                f"defaultPriorityClass: {default!r} is none of priorityClasses (known: {known})"
            )
        return self

    def with_job(self, job: TraceJob) -> Trace:
        """The trace with `job` added after its jobs, checked as the validator checks each job
        (`_Roster.take`: its queue, its name and its pods' names, the nodes its pods are bound
        to, the tiers it names) and nothing else: the rest was checked when the trace was.
        `JobRefused` says why the trace cannot take it."""
        roster = _Roster(self)
        for index, listed in enumerate(self.jobs):
            roster.note(index, listed)
        refusal = roster.take(len(self.jobs), job)
        if refusal is not None:
            raise JobRefused(refusal)
        # (the views the copy keeps, node names, tiers, the queue tree, are of what it shares)
        return self.model_copy(update={"jobs": (*self.jobs, job)})

    def _check_nodes(self) -> None:
        """Node names are unique, whether named or counted (group names apart)."""
        groups = [group.name for group in self.nodes if not group.names]
        if len(set(groups)) != len(groups):
            raise ValueError(f"nodes: node group names repeat: {', '.join(groups)}")
        named: dict[str, str] = {}  # node -> where it is named first
        for index, group in enumerate(self.nodes):
            for number, node in enumerate(group.node_names):
                where = f"nodes.{index}.names.{number}" if group.names else f"nodes.{index}"
                first = named.setdefault(node, where)
                if first != where:
                    raise ValueError(f"{where}: node {node!r} is named by {first} too")

    def _check_occupied(self) -> None:
        """Occupied capacity is on nodes of the trace (its starting nodes), each node occupied
        in one entry."""
        nodes = set(self.node_names)
        occupied: dict[str, int] = {}
        for index, entry in enumerate(self.occupied):
            if entry.node not in nodes:
                raise ValueError(
                    f"occupied.{index}.node: {entry.node!r} is not a node of the trace"
                )
            first = occupied.setdefault(entry.node, index)
            if first != index:
                raise ValueError(
                    f"occupied.{index}.node: {entry.node!r} is listed in occupied.{first} too "
                    "(one entry per node: the sum of what its pods take)"
                )

    def _check_pool(self) -> None:
        """An autoscaled pool's nodes are named apart from the node groups', and the trace has
        no topology for them to be outside of."""
        pool = self.autoscaling
        if pool is None:
            return
        if any(group.name == pool.name for group in self.nodes if not group.names):
            raise ValueError(
                f"autoscaling.name: {pool.name!r} is the name of a node group; the nodes added "
                "need a name of their own"
            )
        added = re.compile(rf"{re.escape(pool.name)}-\d+")
        clash = next((node for node in self.node_names if added.fullmatch(node)), None)
        if clash is not None:
            raise ValueError(
                f"autoscaling.name: the nodes added are named {pool.name}-<number>, as node "
                f"{clash!r} is; the nodes added need a name of their own"
            )
        if self.topology is not None:
            raise ValueError(
                "autoscaling: a trace with a topology cannot autoscale (the nodes added would be "
                "under no HyperNode)"
            )

    def _forest(self, listed: tuple[TraceHyperNode, ...]) -> None:
        nodes = set(self.node_names)
        tiers = {hyper.name: hyper.tier for hyper in listed}
        parent: dict[str, str] = {}  # member -> the HyperNode containing it
        names: dict[int, str] = {}  # tier -> its name
        listed_names = [hyper.name for hyper in listed]
        for index, hyper in enumerate(listed):
            if hyper.name in nodes or listed_names.index(hyper.name) != index:
                what = "a node" if hyper.name in nodes else "another HyperNode"
                raise ValueError(
                    f"topology.hyperNodes.{index}.name: {hyper.name!r} is the name of {what}"
                )
        for index, hyper in enumerate(listed):
            at = f"topology.hyperNodes.{index}"
            if hyper.tier_name is not None:
                named = names.setdefault(hyper.tier, hyper.tier_name)
                if named != hyper.tier_name:
                    raise ValueError(
                        f"{at}.tierName: tier {hyper.tier} is named {named!r} already, "
                        f"not {hyper.tier_name!r}"
                    )
            for field, members in (("nodes", hyper.nodes), ("hyperNodes", hyper.hyper_nodes)):
                for number, member in enumerate(members):
                    where = f"{at}.{field}.{number}"
                    if field == "nodes" and member not in nodes:
                        raise ValueError(f"{where}: {member!r} is not a node of the trace")
                    if field == "hyperNodes":
                        if member not in tiers:
                            raise ValueError(f"{where}: {member!r} is not a listed HyperNode")
                        if tiers[member] >= hyper.tier:
                            raise ValueError(
                                f"{where}: {member} is of tier {tiers[member]}, not below "
                                f"{hyper.name}'s tier {hyper.tier}"
                            )
                    holder = parent.setdefault(member, hyper.name)
                    if holder != hyper.name:
                        raise ValueError(
                            f"{where}: {member} is a member of {holder} already (a node or a "
                            "HyperNode is the member of one HyperNode at most)"
                        )

    @cached_property
    def node_names(self) -> list[str]:
        """The nodes' names, group after group: a group's `names`, else `<name>-<index>`."""
        return [name for group in self.nodes for name in group.node_names]

    @cached_property
    def hyper_nodes(self) -> tuple[TraceHyperNode, ...]:
        """The topology's HyperNodes (none without a topology), lowest tiers first."""
        if self.topology is None:
            return ()
        return tuple(sorted(self.topology.resolved(self.node_names), key=lambda h: h.tier))

    @cached_property
    def tier_names(self) -> dict[str, int]:
        """Each tier's name -> the tier."""
        return {h.tier_name: h.tier for h in self.hyper_nodes if h.tier_name is not None}

    def _check_tree(self) -> None:
        """Queue names are unique, none is `root`, each parent is a queue of the trace and the
        parents lead to the top without a loop."""
        names = [queue.name for queue in self.queues]
        known = {*names, DEFAULT_QUEUE}
        for index, queue in enumerate(self.queues):
            if queue.name == ROOT:
                raise ValueError(
                    f"queues.{index}.name: {ROOT} is the top of the queue tree, implicit; "
                    "a top-level queue names no parent"
                )
            if names.index(queue.name) != index:
                raise ValueError(f"queues.{index}.name: queue {queue.name!r} is listed twice")
            parent = queue.parent_name
            if parent is not None and parent not in known:
                raise ValueError(
                    f"queues.{index}.parent: queue {parent!r} is not in queues "
                    f"(known: {', '.join(sorted(known))})"
                )
        for index, queue in enumerate(self.queues):
            loop = self.tree.loops.get(queue.name)
            if loop:
                raise ValueError(
                    f"queues.{index}.parent: the parents form a loop: {' -> '.join(loop)}"
                )

    @cached_property
    def tree(self) -> QueueTree:
        """The queues as the core's tree reads them (`default` at the top unless listed)."""
        named = {q.name: q.parent_name or "" for q in self.queues}
        return QueueTree.named({DEFAULT_QUEUE: ""} | named)

    @cached_property
    def parents(self) -> dict[str, str]:
        """Each queue below the top level -> its parent."""
        return {name: up for name, up in self.tree.parents.items() if up != ROOT}

    @cached_property
    def children(self) -> dict[str, tuple[str, ...]]:
        """Each queue with child queues -> them, by name."""
        return {name: kids for name, kids in self.tree.children.items() if name != ROOT}

    @property
    def hierarchical(self) -> bool:
        """Some queue has a parent: the queues form a tree deeper than one level."""
        return bool(self.parents)

    @property
    def node_count(self) -> int:
        return sum(group.size for group in self.nodes)

    @property
    def cores(self) -> float:
        """The cluster's cpu in cores."""
        return sum(group.size * group.allocatable["cpu"] for group in self.nodes) / 1000


def parse_trace(document: object, source: str = "trace") -> Trace:
    """Validate a parsed trace document."""
    if not isinstance(document, dict):
        raise TraceError(f"{source}: must be a mapping with nodes, queues and jobs")
    try:
        return Trace.model_validate(document)
    except ValidationError as error:
        raise TraceError(f"{source}: {describe_invalid(error, root='(top level)')}") from error


def load_trace(path: Path) -> Trace:
    """Read and validate the trace in `path` (YAML, or JSON when it ends in .json)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TraceError(f"trace {path}: cannot read it: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise TraceError(
            f"trace {path}: not UTF-8 text: {error.reason} at byte {error.start}"
        ) from error
    try:
        document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        kind = "JSON" if path.suffix == ".json" else "YAML"
        raise TraceError(f"trace {path}: not valid {kind}: {error}") from error
    return parse_trace(document, str(path))
