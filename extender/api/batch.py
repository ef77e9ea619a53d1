"""Volcano's batch API as Lahar's controller reads and writes it: Job (`batch.volcano.sh/v1alpha1`)
and the few fields of the Job's pods the controller decides on.

Pod templates stay plain mappings (`TaskSpec.template`): the controller copies them into pods
and the API server validates them, so Lahar never drops a field it does not model. The names of
the labels and annotations the controller puts on pods, and the phases, events and actions of the
lifecycle, are the constants below, spelled as Volcano spells them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from extender.api.model import KubeModel
from extender.api.scheduling import DEFAULT_QUEUE

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
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"  # the default: no policy matched


class OwnerReference(KubeModel):
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
        """The owner of that kind that controls this object, if any."""
        return next((o for o in self.owner_references if o.controller and o.kind == kind), None)


class LifecyclePolicy(KubeModel):
    event: str | None = None
    events: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    action: str = ""
    timeout: str | None = None  # a Go duration; for PodPending, how long a pod may stay Pending

    @property
    def all_events(self) -> list[str]:
        return ([self.event] if self.event else []) + self.events


class DependsOn(KubeModel):
    name: list[str] = Field(default_factory=list)
    iteration: Literal["any", "all"] = "all"


class TaskSpec(KubeModel):
    name: str = ""
    replicas: int = Field(default=0, ge=0)
    min_available: int | None = Field(default=None, ge=0)
    template: dict[str, Any] = Field(default_factory=dict)
    policies: list[LifecyclePolicy] = Field(default_factory=list)
    max_retry: int = 0
    depends_on: DependsOn | None = None

    @property
    def min_members(self) -> int:
        """Pods of this task the gang needs: minAvailable, or every replica when unset."""
        return self.replicas if self.min_available is None else self.min_available


class VolumeSpec(KubeModel):
    mount_path: str = ""
    volume_claim_name: str = ""
    volume_claim: dict[str, Any] | None = None


class JobSpec(KubeModel):
    scheduler_name: str = ""
    min_available: int = Field(default=0, ge=0)
    volumes: list[VolumeSpec] = Field(default_factory=list)
    tasks: list[TaskSpec] = Field(default_factory=list)
    policies: list[LifecyclePolicy] = Field(default_factory=list)
    plugins: dict[str, list[str] | None] = Field(default_factory=dict)
    running_estimate: str | None = None
    queue: str = DEFAULT_QUEUE
    max_retry: int = 3
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)
    priority_class_name: str = ""
    min_success: int | None = Field(default=None, ge=1)

    @property
    def replicas(self) -> int:
        return sum(task.replicas for task in self.tasks)


class JobState(KubeModel):
    phase: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class TaskState(KubeModel):
    phase: dict[str, int] = Field(default_factory=dict)


class JobCondition(KubeModel):
    """A phase the job entered (Volcano's shape: `status` is the phase), or, with `reason` and
    `message`, a problem the controller hit while in that phase (a pod the server refused)."""

    status: str = ""
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class JobStatus(KubeModel):
    state: JobState = JobState()
    min_available: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    task_status_count: dict[str, TaskState] = Field(default_factory=dict)
    controlled_resources: dict[str, str] = Field(default_factory=dict)
    conditions: list[JobCondition] = Field(default_factory=list)


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
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""


class Command(KubeModel):
    """Volcano's request for an action on a Job (`bus.volcano.sh/v1alpha1` Command), as
    `vcctl job suspend|resume` makes them: the controller performs it once and deletes it."""

    metadata: JobMeta = JobMeta()
    action: str = ""
    target: CommandTarget | None = None
    reason: str = ""
    message: str = ""

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
