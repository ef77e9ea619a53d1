"""The pods Jobs will have once Lahar admits their gangs: what the engine plans those gangs on.

A Job that waits for its PodGroup's admission (`api.job_pods.expecting`: Pending, its tasks
independent) has no pods until Lahar admits its gang and its controller sees the PodGroup leave
Pending. So that the gang takes its turn in the fair order like any other, the cluster state
shows it with the pods its controller will create (`api.job_pods.expected_pods`): held by Lahar's
gate, each with an expected uid, which the real pod of the same name takes over. `ExpectedPods`
keeps them per gang, built once per job spec, version and retry count (a Job's status is written
often; its pods change only with those), and drops them when the job stops expecting (it runs,
finishes, restarts or goes). `ClusterState.gang_pods` adds the ones no pod of the gang is named
after yet. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from extender.api.batch import Job
from extender.api.job_pods import expected_pods, expecting
from extender.api.objects import Pod
from extender.api.scheduling import GroupKind

Stamp = tuple[str, int, int, int]  # the job's uid, generation, version and retry count
NONE: Mapping[str, Pod] = {}


class ExpectedPods:
    def __init__(self) -> None:
        self._jobs: dict[str, tuple[Stamp, str]] = {}  # job key -> (stamp, gang key)
        self._gangs: dict[str, dict[str, Pod]] = {}  # gang key -> pod name -> pod

    def of(self, gang: str) -> Mapping[str, Pod]:
        """The pods the gang's job will have, by name (none unless it expects them)."""
        return self._gangs.get(gang, NONE)

    def __len__(self) -> int:
        return len(self._gangs)

    def upsert(self, job: Job, priority_of: Callable[[str], int]) -> str | None:
        """Take the job as it is now; the key of its gang when what it expects changed."""
        key = job.key
        if not expecting(job):
            return self.delete(key)
        meta, status = job.metadata, job.status
        stamp = (meta.uid, meta.generation, status.version, status.retry_count)
        kept = self._jobs.get(key)
        if kept is not None and kept[0] == stamp:
            return None
        gang = GroupKind.VOLCANO.key(job.metadata.namespace, job.pod_group_name)
        if kept is not None and kept[1] != gang:
            self._gangs.pop(kept[1], None)
        self._jobs[key] = (stamp, gang)
        self._gangs[gang] = expected_pods(job, priority_of)
        return gang

    def delete(self, key: str) -> str | None:
        """The job `key` is gone or expects nothing now; the key of its gang if it did."""
        kept = self._jobs.pop(key, None)
        if kept is None:
            return None
        self._gangs.pop(kept[1], None)
        return kept[1]

    def replace(self, jobs: Iterable[Job], priority_of: Callable[[str], int]) -> set[str]:
        """A full list of jobs; the keys of the gangs whose expected pods changed."""
        listed = {job.key: job for job in jobs}
        changed = {self.delete(key) for key in set(self._jobs) - set(listed)}
        changed |= {self.upsert(job, priority_of) for job in listed.values()}
        return {key for key in changed if key is not None}
