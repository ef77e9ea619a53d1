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
        minAvailable: 6          # default: every replica
        tasks:
          - {name: ps, replicas: 1, cpu: "1", memory: 1Gi, duration: 60}
          - {name: worker, replicas: 5, cpu: "2", memory: 2Gi, duration: 60}

A task's pods run for `duration` seconds once the job has started, that is once `minAvailable`
of its pods run at the same time (a distributed training job makes no progress before that).
Queues form a tree by `parent` as Volcano's do by `spec.parent`: a queue naming none (or
`root`) is a top-level one, under the implicit `root`, which the trace does not list. A parent is
a queue of the trace (`default` included), the parents lead up to root without a loop, and jobs go
in leaf queues only: the core would never admit a job in a queue with children.
Pure: no I/O but reading the file it is given.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal, TypeVar

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

from extender.api.batch import pod_name
from extender.api.quantity import parse_quantity
from extender.api.resources import Resources
from extender.api.scheduling import DEFAULT_QUEUE
from extender.api.wire import describe_invalid
from extender.gangs.queue_tree import ROOT, QueueTree

NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a DNS label, as Volcano's job and queue names are


def _checked(value: str | int | float) -> str | int | float:
    if parse_quantity(value) < 0:  # (a ValueError names what else is wrong with it)
        raise ValueError(f"must not be negative, got {value!r}")
    return value


def _some(value: tuple[T, ...]) -> tuple[T, ...]:
    # (checked once the items are valid: a bad item is one error, not also "too few items")
    if not value:
        raise ValueError("needs at least one")
    return value


Quantity = Annotated[str | int | float, AfterValidator(_checked)]
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


class NodeGroup(_Amounts):
    count: int = Field(ge=1)
    name: str = Field(default="node", pattern=NAME)  # nodes are named <name>-<index>

    @model_validator(mode="after")
    def _has_cpu(self) -> NodeGroup:
        if self.resources["cpu"] <= 0:  # (utilisation is cpu over the cluster's cpu)
            raise ValueError(f"cpu: a node needs some cpu, got {self.cpu!r}")
        return self

    @property
    def allocatable(self) -> Resources:
        return self.resources


class TraceQueue(_Strict):
    name: str = Field(pattern=NAME)
    weight: int = Field(default=1, ge=1)
    capability: dict[str, Quantity] = Field(default_factory=dict)
    reclaimable: bool = True
    parent: str | None = Field(default=None, pattern=NAME)  # None or root: a top-level queue

    @property
    def parent_name(self) -> str | None:
        """Its parent queue in the trace; None at the top level."""
        return None if self.parent in (None, ROOT) else self.parent


class Task(_Amounts):
    name: str = Field(pattern=NAME)
    replicas: int = Field(ge=1)
    duration: float = Field(gt=0)  # seconds each pod runs once the job has started

    @property
    def request(self) -> Resources:
        return self.resources


class TraceJob(_Strict):
    name: str = Field(pattern=NAME)
    arrival: float = Field(default=0.0, ge=0)
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    min_available: int | None = Field(default=None, ge=1)
    tasks: Annotated[tuple[Task, ...], AfterValidator(_some)]

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
        return self

    def pod_names(self) -> Iterator[tuple[Task, str]]:
        """Each pod's task and name, as Volcano's controller names them (`pod_name`)."""
        for task in self.tasks:
            for index in range(task.replicas):
                yield task, pod_name(self.name, task.name, index)


class Trace(_Strict):
    api_version: Literal["lahar.io/v1alpha1"] = "lahar.io/v1alpha1"
    kind: Literal["Trace"] = "Trace"
    nodes: Annotated[tuple[NodeGroup, ...], AfterValidator(_some)]
    queues: tuple[TraceQueue, ...] = ()
    jobs: tuple[TraceJob, ...] = ()

    @model_validator(mode="after")
    def _references(self) -> Trace:
        queues = {queue.name for queue in self.queues} | {DEFAULT_QUEUE}
        self._tree_holds()
        children = self.children
        seen: set[str] = set()
        for index, job in enumerate(self.jobs):
            if job.queue not in queues:
                raise ValueError(
                    f"jobs.{index}.queue: queue {job.queue!r} is not in queues "
                    f"(known: {', '.join(sorted(queues))})"
                )
            if job.queue in children:
                raise ValueError(
                    f"jobs.{index}.queue: queue {job.queue} has child queues "
                    f"({', '.join(children[job.queue])}): jobs go in leaf queues"
                )
            if job.name in seen:
                raise ValueError(f"jobs.{index}.name: job {job.name!r} is listed twice")
            seen.add(job.name)
        pods: dict[str, str] = {}  # pod name -> its job (a namespace holds one pod of a name)
        for index, job in enumerate(self.jobs):
            for _, pod in job.pod_names():
                other = pods.setdefault(pod, job.name)
                if other != job.name:
                    raise ValueError(
                        f"jobs.{index}.name: job {job.name!r} would make pod {pod!r}, which job "
                        f"{other!r} makes too (pods are named JOB-TASK-INDEX, as Volcano names "
                        "them); rename one of them"
                    )
        groups = [group.name for group in self.nodes]
        if len(set(groups)) != len(groups):
            raise ValueError(f"nodes: node group names repeat: {', '.join(groups)}")
        return self

    def _tree_holds(self) -> None:
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
        return sum(group.count for group in self.nodes)

    @property
    def cores(self) -> float:
        """The cluster's cpu in cores."""
        return sum(group.count * group.allocatable["cpu"] for group in self.nodes) / 1000


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
