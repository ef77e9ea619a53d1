"""The controller's view of the cluster: Jobs, their pods and their PodGroups, fed by informers.

Written only on the event loop (the informers post every change there), so a reconcile never sees
a half-applied event. Every change names the job it concerns and pokes `on_change` with the job's
key: the work queue coalesces the pokes into one reconcile.

Evictions are the one event a pod's state cannot tell afterwards: a pod deleted by someone other
than this controller (the Eviction API, a preempting scheduler, `kubectl delete`) is remembered as
evicted, by uid, until the next reconcile of its job takes it (`take_evicted`; a reconcile that
finds the job gone drops them). The controller
records the uids it deletes itself (`expect_deletion`), so its own kills are never mistaken for
evictions. A pod found already terminating at start-up counts as evicted unless it is of an older
job version (the controller deletes those itself).

Commands are filed by the job they are for; those aimed at a Queue (`vcctl queue operate`) are
handed to `queue_commands`, which performs them apart from any job.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from extender.api.batch import JOB_NAME_KEY, Command, Job, JobMeta, JobPod
from extender.api.model import KubeModel
from extender.api.scheduling import PodGroupSpec, PodGroupStatus
from extender.controller.policies import made_for
from extender.controller.queue_commands import QueueCommands, queue_target

log = logging.getLogger(__name__)
CREATION_SEEN_WITHIN = 30.0  # seconds a created pod may take to show in the watch


class OwnedGroup(KubeModel):
    """A PodGroup as the controller reads it back: which job owns it, and its spec."""

    metadata: JobMeta = JobMeta()
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus = PodGroupStatus()

    @property
    def admitted(self) -> bool:
        """It left Pending: the scheduler admitted its gang (Volcano's Inqueue), or it runs."""
        return self.status.phase not in ("", "Pending")

    @property
    def job_key(self) -> str | None:
        owner = self.metadata.controlled_by("Job")
        return f"{self.metadata.namespace}/{owner.name}" if owner else None


class JobStore:
    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.pods: dict[str, dict[str, JobPod]] = {}  # job key -> pod name -> pod
        self.groups: dict[str, dict[str, OwnedGroup]] = {}  # job key -> name -> PodGroup
        self.commands: dict[str, dict[str, Command]] = {}  # job key -> name -> Command
        self.queue_commands = QueueCommands()  # the Commands aimed at a Queue
        self.on_change: Callable[[str], None] = lambda key: None
        self._evicted: dict[str, dict[str, JobPod]] = {}  # job key -> uid -> pod
        self._noted: set[str] = set()  # uids already noted as evicted (each is told once)
        self._deleting: set[str] = set()  # uids this controller deleted
        self._written: dict[str, int] = {}  # job key -> resourceVersion this controller wrote
        # "namespace/name" of the pods this controller created that the watch has not shown yet,
        # and when (`expect_creation`)
        self._creating: dict[str, float] = {}

    # -- jobs ----------------------------------------------------------------------------------

    def replace_jobs(self, jobs: list[Job]) -> None:
        gone = set(self.jobs) - {job.key for job in jobs}
        self.jobs = {job.key: job for job in jobs}
        for key in gone | set(self.jobs):
            self.on_change(key)

    def upsert_job(self, job: Job) -> None:
        self.jobs[job.key] = job
        self.on_change(job.key)

    def delete_job(self, job: Job) -> None:
        self.jobs.pop(job.key, None)
        self._written.pop(job.key, None)
        self._evicted.pop(job.key, None)
        self.on_change(job.key)

    def wrote(self, key: str, resource_version: str) -> None:
        """The controller wrote this job: until the watch shows that version, the cached job is
        stale and must not be acted on."""
        if resource_version.isdigit():
            self._written[key] = int(resource_version)

    def fresh(self, key: str) -> bool:
        written = self._written.get(key)
        job = self.jobs.get(key)
        if written is None or job is None or not job.metadata.resource_version.isdigit():
            return True
        return int(job.metadata.resource_version) >= written

    # -- pods ----------------------------------------------------------------------------------

    @staticmethod
    def _job_key(pod: JobPod) -> str:
        return f"{pod.metadata.namespace}/{pod.job}"

    def replace_pods(self, pods: list[JobPod]) -> None:
        """A full list (at start, or after the watch fell too far behind): pods missing from it
        are gone, as if their deletion had been watched."""
        before = set(self.pods)
        listed = {pod.metadata.uid for pod in pods}
        vanished = [
            (key, pod)
            for key, known in self.pods.items()
            for pod in known.values()
            if pod.metadata.uid not in listed
        ]
        self.pods = {}
        for key, pod in vanished:
            self._note_gone(key, pod)
        for pod in pods:
            self.pods.setdefault(self._job_key(pod), {})[pod.name] = pod
            self._creating.pop(f"{pod.metadata.namespace}/{pod.name}", None)
            self._note_terminating(pod)
        for key in before | set(self.pods):
            self.on_change(key)

    def upsert_pod(self, pod: JobPod) -> None:
        key = self._job_key(pod)
        self.pods.setdefault(key, {})[pod.name] = pod
        self._creating.pop(f"{pod.metadata.namespace}/{pod.name}", None)
        self._note_terminating(pod)
        self.on_change(key)

    def delete_pod(self, pod: JobPod) -> None:
        key = self._job_key(pod)
        pods = self.pods.get(key, {})
        if (known := pods.get(pod.name)) is not None and known.metadata.uid == pod.metadata.uid:
            del pods[pod.name]
            if not pods:
                self.pods.pop(key, None)
        self._note_gone(key, pod)
        self.on_change(key)

    def expect_creation(self, job: Job, names: Iterable[str], now: float) -> None:
        """This controller created these pods of `job`: until the watch shows them (at most
        `CREATION_SEEN_WITHIN` seconds), a reconcile does not create them again."""
        known = self.pods.get(job.key, {})
        for name in names:
            if name not in known:
                self._creating[f"{job.metadata.namespace}/{name}"] = now

    def creating(self, job: Job, name: str, now: float) -> bool:
        """Whether this controller created pod `name` of `job` a moment ago and the watch has
        not shown it yet."""
        sent = self._creating.get(f"{job.metadata.namespace}/{name}")
        if sent is not None and now - sent > CREATION_SEEN_WITHIN:
            del self._creating[f"{job.metadata.namespace}/{name}"]
            return False
        return sent is not None

    def expect_deletion(self, uid: str) -> None:
        self._deleting.add(uid)

    def unexpect_deletion(self, uid: str) -> None:
        """A deletion that was planned but never sent (the pass failed before it)."""
        self._deleting.discard(uid)

    def pods_of(self, job: Job) -> dict[str, JobPod]:
        """The pods of this very job (not of an earlier namesake garbage collection has not
        removed yet), by name. A pod this controller deleted counts as terminating even before
        the watch says so: else a failed pod deleted by RestartPod would be seen failing, and
        retried, again."""
        found: dict[str, JobPod] = {}
        for name, pod in self.pods.get(job.key, {}).items():
            if not made_for(job, pod):
                continue
            if not pod.terminating and pod.metadata.uid in self._deleting:
                meta = pod.metadata.model_copy(update={"deletion_timestamp": "deleting"})
                found[name] = pod.model_copy(update={"metadata": meta})
            else:
                found[name] = pod
        return found

    def take_evicted(self, key: str) -> list[JobPod]:
        return list(self._evicted.pop(key, {}).values())

    def restore_evicted(self, key: str, pods: list[JobPod]) -> None:
        """A reconcile that took these failed: the next one sees them again."""
        for pod in pods:
            self._evicted.setdefault(key, {}).setdefault(pod.metadata.uid, pod)

    def _note_terminating(self, pod: JobPod) -> None:
        if pod.terminating and pod.metadata.uid not in self._deleting:
            self._evict(self._job_key(pod), pod)

    def _note_gone(self, key: str, pod: JobPod) -> None:
        uid = pod.metadata.uid
        if uid in self._deleting:
            self._deleting.discard(uid)
        elif uid in self._noted:
            self._noted.discard(uid)  # told when its deletion began
        else:
            self._evict(key, pod)

    def _evict(self, key: str, pod: JobPod) -> None:
        """Note `pod` as evicted, once: a terminating pod changes several times before it is
        gone, and each change must not be a new eviction."""
        job = self.jobs.get(key)
        if job is not None and pod.version < job.status.version:
            return  # an older version's pod: the controller deletes those itself
        if pod.metadata.uid in self._noted and pod.terminating:
            return
        if pod.terminating:
            self._noted.add(pod.metadata.uid)
        self._evicted.setdefault(key, {})[pod.metadata.uid] = pod

    # -- PodGroups -----------------------------------------------------------------------------

    def replace_groups(self, groups: list[OwnedGroup]) -> None:
        before = set(self.groups)
        self.groups = {}
        for group in groups:
            if (key := group.job_key) is not None:
                self.groups.setdefault(key, {})[group.metadata.name] = group
        for key in before | set(self.groups):
            self.on_change(key)

    def upsert_group(self, group: OwnedGroup) -> None:
        if (key := group.job_key) is not None:
            self.groups.setdefault(key, {})[group.metadata.name] = group
            self.on_change(key)

    def delete_group(self, group: OwnedGroup) -> None:
        key = group.job_key
        if key is not None and group.metadata.name in self.groups.get(key, {}):
            del self.groups[key][group.metadata.name]
            if not self.groups[key]:
                del self.groups[key]
            self.on_change(key)

    def namesake_left(self, job: Job) -> bool:
        """Pods or a PodGroup of an earlier job of this name (another uid) are still known:
        garbage collection has not finished removing what that job owned."""
        pods = self.pods.get(job.key, {}).values()
        groups = self.groups.get(job.key, {})
        return any(not made_for(job, p) for p in pods) or any(
            name != job.pod_group_name for name in groups
        )

    def group_of(self, job: Job) -> OwnedGroup | None:
        """The PodGroup of this very job: its name carries the job's uid, so the PodGroup of an
        earlier namesake that garbage collection has not removed yet is never taken for it."""
        return self.groups.get(job.key, {}).get(job.pod_group_name)

    # -- Commands ------------------------------------------------------------------------------

    def replace_commands(self, commands: list[Command]) -> None:
        before = set(self.commands)
        self.commands = {}
        for command in commands:
            if (key := command.job_key) is not None:
                self.commands.setdefault(key, {})[command.metadata.name] = command
        self.queue_commands.replace([c for c in commands if queue_target(c) is not None])
        for key in before | set(self.commands):
            self.on_change(key)

    def upsert_command(self, command: Command) -> None:
        if (key := command.job_key) is not None:
            self.commands.setdefault(key, {})[command.metadata.name] = command
            self.on_change(key)
        elif queue_target(command) is not None:
            self.queue_commands.upsert(command)

    def delete_command(self, command: Command) -> None:
        if queue_target(command) is not None:
            self.queue_commands.delete(command)
        key = command.job_key
        if key is not None and command.metadata.name in self.commands.get(key, {}):
            del self.commands[key][command.metadata.name]
            if not self.commands[key]:
                del self.commands[key]
            self.on_change(key)  # the next Command, if any

    def next_command(self, key: str) -> Command | None:
        """The job's oldest Command (one is performed per reconcile)."""
        pending = self.commands.get(key)
        if not pending:
            return None
        return min(
            pending.values(), key=lambda c: (c.metadata.creation_timestamp or "", c.metadata.name)
        )


JOB_POD_SELECTOR = JOB_NAME_KEY  # the label every pod the controller makes carries
