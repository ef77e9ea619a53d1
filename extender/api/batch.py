"""Volcano's batch API as Lahar's controller reads and writes it: Job (`batch.volcano.sh/v1alpha1`)
and Command (`bus.volcano.sh/v1alpha1`), every field Volcano has, and the few fields of the Job's
pods the controller decides on.

The CRDs are generated from these models (`api.crds`, `lahar crds --write`): each field's type,
`Crd` marker (`api.schema`) and docstring become its schema, so a field Volcano adds is served
once it is modelled here, and `tests/unit/api/test_crds.py` says which ones are missing. Pod
templates and claim specs stay plain mappings (`Opaque`): the controller copies them into pods
and claims and the API server validates them, so Lahar never drops a field it does not model.
The names of the labels and annotations the controller puts on pods, and the phases, events and
actions of the lifecycle, are the constants below, spelled as Volcano spells them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field

from extender.api.model import KubeModel
from extender.api.scheduling import DEFAULT_QUEUE, NetworkTopology
from extender.api.schema import Count, Crd, Duration, Int32, Opaque, Time

BATCH_API_VERSION = "batch.volcano.sh/v1alpha1"
BUS_API_VERSION = "bus.volcano.sh/v1alpha1"

JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
JOB_VERSION_KEY = "volcano.sh/job-version"
TEMPLATE_UID_KEY = "volcano.sh/template-uid"
RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
PARTITION_KEY = "volcano.sh/partition-id"  # the label of a pod's partition (partitionPolicy)


class Phase(StrEnum):
    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


FINISHED = frozenset({Phase.COMPLETED, Phase.FAILED, Phase.TERMINATED})


class Event(StrEnum):
    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    JOB_UPDATED = "JobUpdated"


class Action(StrEnum):
    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"  # the default: no policy matched


class OwnerReference(KubeModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class JobMeta(KubeModel):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def controlled_by(self, kind: str) -> OwnerReference | None:
        """The owner of that kind (of Volcano's batch API, for a Job) that controls this object,
        if any: a `batch/v1` Job of the same name is not a Volcano Job."""
        return next(
            (
                o
                for o in self.owner_references
                if o.controller
                and o.kind == kind
                and (kind != "Job" or o.api_version in ("", BATCH_API_VERSION))
            ),
            None,
        )


class LifecyclePolicy(KubeModel):
    event: str | None = None
    """An event (PodFailed, PodEvicted, PodPending, Unknown, TaskCompleted, TaskFailed, JobUpdated)
    or * for any."""
    events: list[str] = Field(default_factory=list)
    """Several events with the same action."""
    exit_code: Int32 | None = None
    """A container exit code to act on (instead of an event)."""
    action: str = ""
    """AbortJob, RestartJob, RestartTask, RestartPod, RestartPartition, TerminateJob, CompleteJob or
    ResumeJob."""
    timeout: Duration | None = None
    """A duration (e.g. 10m) to wait before acting; for PodPending, how long a pod may stay
    Pending."""

    @property
    def all_events(self) -> list[str]:
        return ([self.event] if self.event else []) + self.events


class DependsOn(KubeModel):
    name: list[str] = Field(default_factory=list)
    """The tasks this task waits for."""
    iteration: str = "all"
    """`any`: wait for one of the named tasks; anything else (`all`, or unset): for all of them,
    as Volcano reads it."""


class PartitionPolicy(KubeModel):
    """A task's pods in partitions of equal size (Volcano's `partitionPolicy`): the controller
    labels each pod with its partition (`volcano.sh/partition-id`) and makes each partition a
    sub-group of the job's PodGroup (`subGroupPolicy`)."""

    total_partitions: Annotated[Int32, Crd(minimum=1)]
    """How many partitions the task's pods are divided into; times partitionSize, the task's
    replicas."""
    partition_size: Annotated[Int32, Crd(minimum=1)]
    """The pods of each partition."""
    network_topology: NetworkTopology | None = None
    """The network topology each partition's pods must stay within."""
    min_partitions: Annotated[Int32, Crd(minimum=0, default=0)] = 0
    """Partitions that must be placeable before any is (0: every replica counts, as minAvailable
    says)."""


class TaskSpec(KubeModel):
    name: str = ""
    """The task's name (a DNS label), part of its pods' names."""
    replicas: Int32 = Field(default=0, ge=0)
    """Pods of this task."""
    min_available: Int32 | None = Field(default=None, ge=0)
    """Pods of this task the gang needs; every replica when unset."""
    template: Opaque = Field(default_factory=dict)
    """The PodTemplateSpec of the task's pods, validated when they are created."""
    policies: list[LifecyclePolicy] = Field(default_factory=list)
    """What to do on pod and task events (before the job's own policies)."""
    topology_policy: Literal["none", "best-effort", "restricted", "single-numa-node"] | None = None
    """How the task's pods are aligned to NUMA nodes (Volcano's numa-aware plugin)."""
    max_retry: Annotated[Int32, Crd(minimum=0)] = 0
    """Restarts of the task before it fails."""
    depends_on: DependsOn | None = None
    """Tasks that must be running before this task's pods are created."""
    partition_policy: PartitionPolicy | None = None
    """The task's pods in partitions of equal size, each placed as a sub-group."""

    @property
    def min_members(self) -> int:
        """Pods of this task the gang needs: minAvailable; else, with a partition policy that
        sets minPartitions, that many partitions; else every replica (Volcano's rule)."""
        if self.min_available is not None:
            return self.min_available
        partitions = self.partition_policy
        if partitions is not None and partitions.min_partitions and partitions.partition_size:
            return partitions.min_partitions * partitions.partition_size
        return self.replicas

    def partition_of(self, index: int) -> int | None:
        """The partition of the task's pod `index` (Volcano's: replicas 0..size-1 are partition
        0, and so on); None without a partition policy."""
        partitions = self.partition_policy
        if partitions is None:
            return None
        return index // partitions.partition_size if partitions.partition_size > 0 else 0


class VolumeSpec(KubeModel):
    mount_path: Annotated[str, Crd(required=True)] = ""
    """Where the volume is mounted in the containers."""
    volume_claim_name: str = ""
    """An existing PersistentVolumeClaim to mount."""
    volume_claim: Opaque | None = None
    """A PersistentVolumeClaimSpec; the controller creates the claim."""


class JobSpec(KubeModel):
    scheduler_name: str = ""
    """The scheduler of the job's pods (set on each pod template that names none)."""
    min_available: Int32 = Field(default=0, ge=0)
    """Pods that must be placeable together before any of them is bound."""
    volumes: list[VolumeSpec] = Field(default_factory=list)
    """Volumes mounted into every container of every task."""
    tasks: list[TaskSpec] = Field(default_factory=list)
    """The job's tasks; the webhook requires at least one."""
    policies: list[LifecyclePolicy] = Field(default_factory=list)
    """What to do on pod and task events (after the tasks' own policies)."""
    plugins: Annotated[dict[str, list[str] | None], Crd(nullable=True)] = Field(
        default_factory=dict
    )
    """Job plugins by name (env, svc, ssh, ...), each with its arguments."""
    running_estimate: Duration | None = None
    """How long the job is expected to run, a duration (e.g. 2h)."""
    queue: Annotated[str, Crd(default=DEFAULT_QUEUE)] = DEFAULT_QUEUE
    """The Queue the job is scheduled from."""
    max_retry: Annotated[Int32, Crd(minimum=0, default=3)] = 3
    """Restarts of the job before it fails."""
    ttl_seconds_after_finished: Int32 | None = Field(default=None, ge=0)
    """Seconds after the job finishes before it is deleted; kept when unset."""
    priority_class_name: str = ""
    """The PriorityClass of the job's PodGroup and pods."""
    min_success: Int32 | None = Field(default=None, ge=1)
    """Pods that must succeed for the job to complete."""
    network_topology: NetworkTopology | None = None
    """The network topology the job's pods must stay within (Volcano's HyperNodes)."""

    @property
    def replicas(self) -> int:
        return sum(task.replicas for task in self.tasks)


class JobState(KubeModel):
    phase: Annotated[str, Crd(enum=tuple(p.value for p in Phase))] = ""
    """The job's phase."""
    reason: str = ""
    """Why it entered the phase, one word."""
    message: str = ""
    """Why it entered the phase."""
    last_transition_time: Time | None = None
    """When it entered the phase."""


class TaskState(KubeModel):
    phase: dict[str, Int32] = Field(default_factory=dict)
    """The task's pods by pod phase."""


class JobCondition(KubeModel):
    """A phase the job entered (Volcano's shape: `status` is the phase), or, with `reason` and
    `message`, a problem the controller hit while in that phase (a pod the server refused)."""

    status: Annotated[str, Crd(required=True)] = ""
    """The phase the job entered."""
    last_transition_time: Time | None = None
    """When it entered the phase."""
    reason: str | None = None
    """A problem met in the phase, one word (Lahar's)."""
    message: str | None = None
    """A problem met in the phase (Lahar's)."""


class JobStatus(KubeModel):
    state: JobState = JobState()
    """The job's phase and why it entered it."""
    min_available: Count = 0
    """The job's minAvailable when it was last started."""
    pending: Count = 0
    running: Count = 0
    succeeded: Count = 0
    failed: Count = 0
    terminating: Count = 0
    unknown: Count = 0
    version: Count = 0
    """Bumped on each restart; pods of older versions are replaced."""
    retry_count: Count = 0
    """Restarts so far."""
    running_duration: Duration | None = None
    """How long the job has been running, a duration."""
    task_status_count: dict[str, TaskState] = Field(default_factory=dict)
    """Per task, its pods by pod phase."""
    controlled_resources: dict[str, str] = Field(default_factory=dict)
    """Objects the job's plugins made (plugin-<name> → name)."""
    conditions: list[JobCondition] = Field(default_factory=list)
    """Phases the job entered, with problems met in them."""


class Job(KubeModel):
    api_version: str = BATCH_API_VERSION
    kind: str = "Job"
    metadata: JobMeta = JobMeta()
    spec: JobSpec = JobSpec()
    status: JobStatus = JobStatus()

    @property
    def key(self) -> str:
        return self.metadata.key

    @property
    def phase(self) -> str:
        return self.status.state.phase or Phase.PENDING

    @property
    def pod_group_name(self) -> str:
        return f"{self.metadata.name}-{self.metadata.uid}"

    def task(self, name: str) -> TaskSpec | None:
        return next((t for t in self.spec.tasks if t.name == name), None)

    def owner_reference(self) -> dict[str, Any]:
        """What the job's pods, PodGroup and plugin objects carry, so garbage collection
        removes them with the job."""
        return {
            "apiVersion": BATCH_API_VERSION,
            "kind": "Job",
            "name": self.metadata.name,
            "uid": self.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


class CommandTarget(KubeModel):
    """An owner reference to the object a Command is for."""

    api_version: Annotated[str, Crd(required=True)] = ""
    kind: Annotated[str, Crd(required=True)] = ""
    name: Annotated[str, Crd(required=True)] = ""
    uid: Annotated[str, Crd(required=True)] = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class Command(KubeModel):
    """Volcano's request for an action on a Job (`bus.volcano.sh/v1alpha1` Command), as
    `vcctl job suspend|resume` makes them: the controller performs it once and deletes it."""

    metadata: JobMeta = JobMeta()
    action: str = ""
    """AbortJob, ResumeJob, RestartJob, TerminateJob or CompleteJob."""
    target: Annotated[CommandTarget, Crd(map_type="atomic")] | None = None
    """The object the action is for (an owner reference to a Job)."""
    reason: str = ""
    """Why the action was asked for, one word."""
    message: str = ""
    """Why the action was asked for."""

    @property
    def job_key(self) -> str | None:
        target = self.target
        if target is None or target.kind != "Job" or not target.name:
            return None
        return f"{self.metadata.namespace}/{target.name}"


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


# -- the job's pods, as the controller reads them back ---------------------------------------------


class Terminated(KubeModel):
    exit_code: int = 0
    reason: str = ""


class ContainerState(KubeModel):
    terminated: Terminated | None = None


class ContainerStatus(KubeModel):
    name: str = ""
    restart_count: int = 0
    state: ContainerState = ContainerState()
    last_state: ContainerState = ContainerState()


class PodCondition(KubeModel):
    type: str = ""
    status: str = ""
    reason: str = ""


class JobPodStatus(KubeModel):
    phase: str = "Pending"
    reason: str = ""
    conditions: list[PodCondition] = Field(default_factory=list)
    container_statuses: list[ContainerStatus] = Field(default_factory=list)
    init_container_statuses: list[ContainerStatus] = Field(default_factory=list)


class JobPod(KubeModel):
    """A pod the controller made: which job, task, index and job version it belongs to."""

    metadata: JobMeta = JobMeta()
    status: JobPodStatus = JobPodStatus()

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def job(self) -> str:
        return self.metadata.annotations.get(JOB_NAME_KEY) or self.metadata.labels.get(
            JOB_NAME_KEY, ""
        )

    @property
    def task(self) -> str:
        return self.metadata.annotations.get(TASK_SPEC_KEY) or self.metadata.labels.get(
            TASK_SPEC_KEY, ""
        )

    @property
    def index(self) -> int:
        return _int(self.metadata.annotations.get(TASK_INDEX_KEY), -1)

    @property
    def version(self) -> int:
        return _int(self.metadata.annotations.get(JOB_VERSION_KEY), -1)

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def terminating(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    @property
    def disrupted(self) -> bool:
        """Kubernetes marked it for eviction or preemption (condition DisruptionTarget)."""
        return any(
            c.type == "DisruptionTarget" and c.status == "True" for c in self.status.conditions
        )

    @property
    def restarts(self) -> int:
        """How often the kubelet restarted its containers (init containers too)."""
        statuses = [*self.status.container_statuses, *self.status.init_container_statuses]
        return sum(s.restart_count for s in statuses)

    @property
    def exit_code(self) -> int | None:
        """The exit code of its first container that ended with a non-zero code (else the first
        that ended); None while none has ended."""
        ended = [
            s.state.terminated or s.last_state.terminated for s in self.status.container_statuses
        ]
        codes = [t.exit_code for t in ended if t is not None]
        return next((c for c in codes if c != 0), codes[0] if codes else None)


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
