"""Sending one reconcile's plan to the API server, in a worker thread, in an order that survives a
crash at any point:
0. for a new job, a Warning Event (`FieldNotHonoured`) per Volcano field Lahar does not act on
   yet (`admission.unhonoured`), once per job in this process (the next reconcile finds the job
   with a status, and says nothing);
1. the PodGroup (pods name it) and the plugin objects (pods mount them), applied only when they
   differ from what this process last applied; objects made once (the ssh key pair, volume
   claims) posted once per job. While objects of an earlier job of the same name are still
   around (it was deleted and garbage collection has not removed its pods or PodGroup yet), and
   for `NAMESAKE_GRACE` seconds after (garbage collection may remove the rest later), one found
   made already may be that job's, about to go: it is not taken as made, no pod is created (it
   would mount the old one), and the job is looked at again after `NAMESAKE_RECHECK` seconds
   until its own is created (the controller may not read Secrets, so it cannot ask whose the one
   found is); objects kept applied are applied again on every pass meanwhile;
2. the status, replaced with the job's resourceVersion as precondition: a conflict raises and the
   work queue retries on a fresher copy, before any pod is touched on a stale status;
3. pod deletions (the reconciler recorded them as the controller's own, so they are not taken
   for evictions), and the Command performed, if any;
4. pod creations, by deterministic name: a pod made before a restart answers "exists", so no
   duplicate is ever made. A template the API server refuses becomes a condition and an Event on
   the job, and `PodsRefused` is raised so the work queue retries with backoff, until the pods
   have been refused long enough (`lifecycle.refused`): then the job is Failed.
The writer never touches the store (it lives on the event loop): what the loop needs afterwards
(the resourceVersion written, the pods deleted) is left in the `Writes` it was given.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from extender.admission.unhonoured import REASON as UNHONOURED
from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION, Command, Job, JobStatus, Phase
from extender.api.job_pods import scheduler_of, waits_for_admission
from extender.api.log_fields import about_job
from extender.controller import lifecycle
from extender.controller.job_objects import build_pod
from extender.controller.lifecycle import Plan
from extender.jobplugins import JobPlugin
from extender.kube import KubeError, record_event, writes
from extender.kube.raw import ApiStatusError

log = logging.getLogger(__name__)

POD_CREATE_FAILED = lifecycle.POD_CREATE_FAILED
INVALID = 422  # with the fields at fault: the template itself is wrong, refused again for ever
NAMESAKE_RECHECK = 2.0  # seconds between looks at an earlier namesake's object going
NAMESAKE_GRACE = 60.0  # seconds after the namesake's pods and PodGroup went: its objects may too
REFUSED = (400, 403, 404, 422)  # the server will refuse this body again: report, do not retry hot
CREATES = 16  # pods of one job created at the same time
# (shared by every worker: a job's pods are created together, jobs one worker each)
_CREATING = ThreadPoolExecutor(max_workers=CREATES, thread_name_prefix="create-pods")


class PodsRefused(KubeError):
    """The API server refused to create some of the job's pods (reported on the job): an API
    call that failed, as the work queue counts it (a WARNING, retried)."""


@dataclass
class Writes:
    """What one reconcile sends to the API server, prepared on the loop."""

    job: Job
    plan: Plan
    plugins: list[JobPlugin] = field(default_factory=list)
    owned: list[Callable[[], dict[str, Any]]] = field(default_factory=list)  # apply when changed
    once: list[Callable[[], dict[str, Any]]] = field(default_factory=list)  # create if missing
    command: Command | None = None  # performed by this reconcile: deleted once it is written
    unhonoured: list[str] = field(default_factory=list)  # fields to warn of, once per job
    namesake: bool = False  # objects of an earlier job of the same name are still around
    admitted: bool = False  # its PodGroup has left Pending: Lahar admitted the gang
    # Filled in by the worker thread, read on the loop afterwards (even if the writes failed):
    written: str | None = None  # the resourceVersion of the last status written
    deleted: set[str] = field(default_factory=set)  # uids of the pods deleted
    created: set[str] = field(default_factory=set)  # names of the pods created (or found made)
    recheck_after: float | None = None  # an earlier namesake's object may be in the way


class JobWriter:
    def __init__(self, api: k8s.ApiClient, served: Collection[str] = ()) -> None:
        self.api = api
        # The schedulers Lahar serves: their jobs' pods wait for their PodGroup's admission, or
        # are created behind Lahar's gate (`api.job_pods.waits_for_admission`).
        self.served = frozenset(served)
        # "<job key>#<job uid>/<kind>/<name>" -> digest applied, and the objects made once; read
        # on the loop and written by worker threads, hence the lock.
        self._applied: dict[str, str] = {}
        self._made: set[str] = set()
        # Jobs (by key#uid) that met objects of an earlier namesake, and when they last did: for
        # `NAMESAKE_GRACE` seconds after, what garbage collection may still delete from under them
        # is not taken as done (applied on every pass; an object made once that exists is taken
        # for the namesake's, and the job's pods wait).
        self._renamed: dict[str, float] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(job: Job, kind: str, name: str) -> str:
        return f"{job.key}#{job.metadata.uid}/{kind}/{name}"

    def made(self, job: Job, kind: str, name: str) -> bool:
        with self._lock:
            return self._key(job, kind, name) in self._made

    def forget(self, key: str) -> None:
        """The job is gone: drop what this process remembers of its objects."""
        prefix = f"{key}#"
        with self._lock:
            self._applied = {k: v for k, v in self._applied.items() if not k.startswith(prefix)}
            self._made = {k for k in self._made if not k.startswith(prefix)}
            self._renamed = {k: t for k, t in self._renamed.items() if not k.startswith(prefix)}

    def write(self, work: Writes) -> None:
        job, plan = work.job, work.plan
        if plan.delete_job:
            # The outcome first (a job finishing with ttlSecondsAfterFinished 0 is seen finished
            # by whoever watches it), then the job, as it is now: had it changed since this copy
            # was read (its TTL), the next pass decides again on the fresh copy.
            work.written = self.write_status(job, plan.status)
            self._delete_job(job, work.written or job.metadata.resource_version)
            return
        self._warn_unhonoured(job, work.unhonoured)
        self._ensure_objects(work)
        version = work.written = self.write_status(job, plan.status)
        for pod in plan.delete:
            meta = pod.metadata
            writes.delete(self.api, "v1", "Pod", meta.namespace, meta.name, uid=meta.uid)
            work.deleted.add(meta.uid)
            log.info(
                "job %s: deleted pod %s (%s)",
                job.key,
                pod.name,
                plan.phase,
                extra=about_job(job.key),
            )
        if work.command is not None:
            self._done(job, work.command, plan)
        # While an object made once may still be an earlier namesake's (its ssh keys), no pod is
        # made: it would mount the object about to go, not the job's own.
        rechecking = work.recheck_after is not None
        if rechecking or plan.phase not in (Phase.PENDING, Phase.RUNNING):
            return
        current = job if version is None else _with(job, plan.status, version)
        refused = self._create_pods(current, work) if plan.create else []
        if refused:
            written, failed = self._report_refused(current, plan.status, refused)
            work.written = written or version
            if not failed:
                raise PodsRefused(f"job {job.key}: {refused[0]}")
        elif plan.status.state.reason == POD_CREATE_FAILED:
            # Made now, or no longer wanted (the task scaled down): the run of refusals ends.
            cleared = lifecycle.pods_created(plan.status, time.time())
            work.written = self.write_status(current, cleared) or version

    def fail_invalid(self, job: Job, invalid: list[str]) -> str | None:
        """Fail a job the controller cannot run, saying why; the resourceVersion written."""
        message = "; ".join(invalid)
        if job.phase == Phase.FAILED and job.status.state.message == message:
            return None
        log.warning("job %s: cannot run: %s", job.key, message, extra=about_job(job.key))
        status = lifecycle.problem(
            job.status, "InvalidJob", message, time.time(), phase=Phase.FAILED
        )
        return self.write_status(job, status)

    def write_status(self, job: Job, status: JobStatus) -> str | None:
        """Replace the job's status if it changed (an Event when the phase or reason did); the
        resourceVersion written."""
        if status == job.status:
            return None
        body = {
            "apiVersion": BATCH_API_VERSION,
            "kind": "Job",
            "metadata": {
                "name": job.metadata.name,
                "namespace": job.metadata.namespace,
                "resourceVersion": job.metadata.resource_version,
            },
            "status": status.model_dump(by_alias=True, exclude_none=True),
        }
        stored = writes.replace_status(self.api, body)
        old, new = job.status.state, status.state
        # Refused pods are told by their own Event (FailedCreatePod), the problem's end by the
        # condition: a phase event only when the phase changes then.
        said = old.phase == new.phase and POD_CREATE_FAILED in (old.reason, new.reason)
        if (old.phase, old.reason) != (new.phase, new.reason) and not said:
            told = f": {new.message}" if new.message else ""
            log.info(
                "job %s: %s -> %s (%s%s)",
                job.key,
                old.phase or "(new)",
                new.phase,
                new.reason,
                told,
                extra=about_job(job.key),
            )
            self._event(job, "Normal", new.reason or new.phase, f"{new.phase}: {new.message}")
        return str((stored.get("metadata") or {}).get("resourceVersion", ""))

    def _delete_job(self, job: Job, resource_version: str) -> None:
        meta = job.metadata
        deleted = writes.delete(
            self.api,
            BATCH_API_VERSION,
            "Job",
            meta.namespace,
            meta.name,
            uid=meta.uid,
            resource_version=resource_version,
            propagation="Foreground",
        )
        if deleted:
            log.info(
                "job %s: deleted, %ss after it finished (ttlSecondsAfterFinished)",
                job.key,
                job.spec.ttl_seconds_after_finished,
                extra=about_job(job.key),
            )

    def _done(self, job: Job, command: Command, plan: Plan) -> None:
        meta = command.metadata
        writes.delete(self.api, BUS_API_VERSION, "Command", meta.namespace, meta.name, uid=meta.uid)
        taken = plan.decision.action.value == command.action
        outcome = "performed" if taken else f"ignored in phase {job.phase}"
        log.info(
            "job %s: Command %s (%s) %s",
            job.key,
            meta.name,
            command.action,
            outcome,
            extra=about_job(job.key),
        )

    def _warn_unhonoured(self, job: Job, messages: list[str]) -> None:
        """A Warning Event for each field of the job Lahar does not act on yet, once."""
        for message in messages:
            key = self._key(job, UNHONOURED, message)
            with self._lock:
                if key in self._made:
                    continue
                self._made.add(key)
            log.info("job %s: %s", job.key, message, extra=about_job(job.key))
            self._event(job, "Warning", UNHONOURED, message)

    def _ensure_objects(self, work: Writes) -> None:
        job = work.job
        renamed, now = f"{job.key}#{job.metadata.uid}", time.monotonic()
        with self._lock:
            if work.namesake:
                self._renamed[renamed] = now
            wary = now - self._renamed.get(renamed, -NAMESAKE_GRACE) < NAMESAKE_GRACE
        for build in work.owned:
            body = build()
            key = self._key(job, body["kind"], body["metadata"]["name"])
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            with self._lock:
                unchanged = self._applied.get(key) == digest and not wary
            if not unchanged:
                writes.apply(self.api, body)
                with self._lock:
                    self._applied[key] = digest
        for build in work.once:
            body = build()
            kind, name = body["kind"], body["metadata"]["name"]
            if writes.create(self.api, body):
                log.info("job %s: created %s %s", job.key, kind, name, extra=about_job(job.key))
            elif wary:
                log.info(
                    "job %s: %s %s exists, perhaps still the one of an earlier job of this name; "
                    "trying again in %.0fs",
                    job.key,
                    kind,
                    name,
                    NAMESAKE_RECHECK,
                    extra=about_job(job.key),
                )
                work.recheck_after = NAMESAKE_RECHECK
                continue
            with self._lock:
                self._made.add(self._key(job, kind, name))

    def _create_pods(self, job: Job, work: Writes) -> list[ApiStatusError]:
        """Create the planned pods, `CREATES` at a time (a gang's pods are wanted together); the
        refusals the server will repeat (`REFUSED`), reported by the caller. Any other error is
        raised once every create has been tried."""
        waits, later, bodies = waits_for_admission(job), 0, []
        for task, index in work.plan.create:
            served = scheduler_of(job, task) in self.served
            if served and waits and not work.admitted:
                later += 1  # made once Lahar admits the gang (the PodGroup leaves Pending)
                continue
            bodies.append(build_pod(job, task, index, work.plugins, gated=served and not waits))
        if later:
            log.debug(
                "job %s: %d pods wait for PodGroup %s to be admitted",
                job.key,
                later,
                job.pod_group_name,
                extra=about_job(job.key),
            )
        refused: list[ApiStatusError] = []
        failed: list[BaseException] = []
        for body, outcome in zip(bodies, _CREATING.map(self._create_one, bodies), strict=True):
            if isinstance(outcome, ApiStatusError) and outcome.status in REFUSED:
                refused.append(outcome)
                continue
            if isinstance(outcome, BaseException):
                failed.append(outcome)
                continue
            work.created.add(body["metadata"]["name"])  # (made now, or found made)
            if outcome is True:
                log.info(
                    "job %s: created pod %s (version %d)",
                    job.key,
                    body["metadata"]["name"],
                    job.status.version,
                    extra=about_job(job.key),
                )
        if failed:
            raise failed[0]
        return refused

    def _create_one(self, body: dict[str, Any]) -> bool | BaseException:
        """Whether the pod was made (False: it existed); the error when the call failed."""
        try:
            return writes.create(self.api, body)
        except (KubeError, ApiStatusError) as error:
            return error

    def _report_refused(
        self, job: Job, status: JobStatus, refused: list[ApiStatusError]
    ) -> tuple[str | None, bool]:
        """Say on the job why its pods were refused (an Event each time, the condition when it
        changed), or fail the job once they have been refused long enough; the resourceVersion
        written, and whether the job failed."""
        first = str(refused[0])
        message = first if len(refused) == 1 else f"{first} (and {len(refused) - 1} more)"
        log.warning("job %s: %s", job.key, message, extra=about_job(job.key))
        self._event(job, "Warning", "FailedCreatePod", message)
        # A webhook's or a policy's denial (400, or 422 naming no field) may be lifted.
        invalid = all(error.status == INVALID and error.fields for error in refused)
        reported = lifecycle.refused(status, message, time.time(), invalid=invalid)
        failed = reported.state.phase == Phase.FAILED
        if reported == status:
            return None, False  # said already
        try:
            return self.write_status(job, reported), failed
        except KubeError as error:
            log.warning(
                "job %s: could not record the refused pods: %s",
                job.key,
                error,
                extra=about_job(job.key),
            )
            return None, False

    def _event(self, job: Job, kind: str, reason: str, message: str) -> None:
        involved = {
            "apiVersion": BATCH_API_VERSION,
            "kind": "Job",
            "namespace": job.metadata.namespace,
            "name": job.metadata.name,
            "uid": job.metadata.uid,
        }
        try:
            record_event(self.api, involved, kind, reason, message)
        except KubeError as error:
            log.warning(
                "job %s: could not record event %s: %s",
                job.key,
                reason,
                error,
                extra=about_job(job.key),
            )


def _with(job: Job, status: JobStatus, version: str) -> Job:
    """The job as stored after its status was written."""
    meta = job.metadata.model_copy(update={"resource_version": version})
    return job.model_copy(update={"metadata": meta, "status": status})
