"""One reconcile of one Job: read the store, plan (pure), then write the difference.

On the event loop: the job, its pods and evictions are read from the store and `lifecycle.plan`
decides. The writes then run in a worker thread, in an order that survives a crash at any point:
1. the PodGroup (pods name it) and the plugin objects (pods mount them), applied only when they
   differ from what this process last applied;
2. pod deletions (recorded first as the controller's own, so they are not taken for evictions);
3. the status, replaced with the job's resourceVersion as precondition: a conflict raises and the
   work queue retries on a fresher copy; nothing below runs on a stale status;
4. pod creations, by deterministic name: a pod made before a restart answers "exists", so no
   duplicate is ever made. A template the API server refuses becomes a condition and an Event on
   the job, and the reconcile fails so the work queue retries with backoff (no crash loop, no
   hot loop).
A job the controller cannot run (an unknown plugin, no tasks, two tasks of one name) is Failed at
once, with the reason in its status and an Event.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from extender.api.batch import (
    BATCH_API_VERSION,
    BUS_API_VERSION,
    Action,
    Command,
    Job,
    JobCondition,
    JobPod,
    JobStatus,
    Phase,
)
from extender.api.times import rfc3339
from extender.controller import lifecycle
from extender.controller.lifecycle import Plan
from extender.controller.objects import build_pod, build_pod_group, volume_claims
from extender.controller.plugins import JobPlugin, PluginError, make_plugins
from extender.controller.store import JobStore
from extender.kube import KubeError, record_event, writes
from extender.kube.raw import ApiStatusError

log = logging.getLogger(__name__)

POD_CREATE_FAILED = "PodCreateFailed"
GROUP_PHASES = (Phase.PENDING, Phase.RUNNING, Phase.RESTARTING)


class PodsRefused(Exception):
    """The API server refused to create some of the job's pods (reported on the job)."""


def problems(job: Job) -> list[str]:
    """What makes the job impossible to run, each naming its field."""
    found: list[str] = []
    if not job.spec.tasks:
        found.append("spec.tasks: a job needs at least one task")
    seen: set[str] = set()
    for index, task in enumerate(job.spec.tasks):
        if not task.name:
            found.append(f"spec.tasks[{index}].name: must not be empty")
        elif task.name in seen:
            found.append(f"spec.tasks[{index}].name: duplicate task name {task.name!r}")
        seen.add(task.name)
    try:
        make_plugins(job.spec.plugins)
    except PluginError as error:
        found.append(str(error))
    return found


@dataclass
class Writes:
    """What one reconcile sends to the API server, prepared on the loop."""

    job: Job
    plan: Plan
    plugins: list[JobPlugin] = field(default_factory=list)
    owned: list[Callable[[], dict[str, Any]]] = field(default_factory=list)  # apply when changed
    once: list[Callable[[], dict[str, Any]]] = field(default_factory=list)  # create if missing
    command: Command | None = None  # performed by this reconcile: deleted once it is written
    # Filled in by the worker thread, read on the loop afterwards (even if the writes failed):
    written: str | None = None  # the resourceVersion of the last status written
    deleted: set[str] = field(default_factory=set)  # uids of the pods deleted


class Reconciler:
    def __init__(self, api: k8s.ApiClient, store: JobStore) -> None:
        self.api, self.store = api, store
        self._applied: dict[str, str] = {}  # "<job key>#<job uid>/<kind>/<name>" -> digest
        self._made: set[str] = set()  # "<job key>#<job uid>/<kind>/<name>" created once
        self._lock = threading.Lock()  # both are read and written by worker threads

    async def __call__(self, key: str) -> float | None:
        job = self.store.jobs.get(key)
        if job is None:
            self._forget(key)
            self.store.take_evicted(key)  # its pods going with it evicted nothing
            return None
        if not self.store.fresh(key):
            return 0.05  # our last write is not in the cache yet: never act on an older copy
        pods = {
            name: self._as_seen(pod)
            for name, pod in self.store.pods.get(key, {}).items()
            if (owner := pod.metadata.controlled_by("Job")) is None or owner.uid == job.metadata.uid
        }
        invalid = problems(job)
        if invalid:
            written = await asyncio.to_thread(self._fail_invalid, job, invalid)
            if written:
                self.store.wrote(key, written)
            return None
        evicted = self.store.take_evicted(key)
        command = self.store.next_command(key)
        plan = lifecycle.plan(job, pods, evicted, time.time(), _action_of(job, command))
        if command is not None:
            self.store.restore_evicted(key, evicted)  # a Command decided: policies see them next
        work = self._prepare(job, plan)
        work.command = command
        for pod in plan.delete:
            self.store.expect_deletion(pod.metadata.uid)
        try:
            await asyncio.to_thread(self._write, work)
        except BaseException:
            self.store.restore_evicted(key, evicted)
            for pod in plan.delete:  # deletions never sent are not the controller's
                if pod.metadata.uid not in work.deleted:
                    self.store.unexpect_deletion(pod.metadata.uid)
            raise
        finally:
            if work.written:
                self.store.wrote(key, work.written)
        return plan.requeue_after

    # -- on the loop ---------------------------------------------------------------------------

    def _as_seen(self, pod: JobPod) -> JobPod:
        """A pod this controller deleted counts as terminating even before the watch says so
        (else a failed pod deleted by RestartPod would be seen failing, and retried, again)."""
        if pod.terminating or not self.store.deleting(pod.metadata.uid):
            return pod
        meta = pod.metadata.model_copy(update={"deletion_timestamp": "deleted by the controller"})
        return pod.model_copy(update={"metadata": meta})

    def _prepare(self, job: Job, plan: Plan) -> Writes:
        work = Writes(job, plan)
        if plan.delete_job or plan.phase not in GROUP_PHASES:
            return work
        work.plugins = make_plugins(job.spec.plugins)
        group = self.store.groups.get(job.key)
        if group is None or self._group_changed(job, group.spec.model_dump(by_alias=True)):
            work.owned.append(lambda: build_pod_group(job))
        resources = dict(plan.status.controlled_resources)
        for plugin in work.plugins:
            resources[f"plugin-{plugin.name}"] = plugin.name
            for item in plugin.objects(job):
                if item.replace:
                    work.owned.append(item.build)
                elif not self._was_made(job, item.kind, item.name):
                    work.once.append(item.build)
        for claim in volume_claims(job):
            if not self._was_made(job, claim["kind"], claim["metadata"]["name"]):
                work.once.append(functools.partial(dict, claim))
        plan.status = plan.status.model_copy(update={"controlled_resources": resources})
        return work

    def _was_made(self, job: Job, kind: str, name: str) -> bool:
        with self._lock:
            return f"{job.key}#{job.metadata.uid}/{kind}/{name}" in self._made

    @staticmethod
    def _group_changed(job: Job, current: dict[str, Any]) -> bool:
        wanted = build_pod_group(job)["spec"]
        return any(current.get(k) != v for k, v in wanted.items() if k != "minResources")

    def _forget(self, key: str) -> None:
        """The job is gone: drop what this process remembers of its objects."""
        prefix = f"{key}#"
        with self._lock:
            self._applied = {k: v for k, v in self._applied.items() if not k.startswith(prefix)}
            self._made = {k for k in self._made if not k.startswith(prefix)}

    # -- in a worker thread --------------------------------------------------------------------

    def _write(self, work: Writes) -> None:
        """Send the plan: the status before the pod changes, so a conflict (the job changed
        meanwhile) stops the pass before a pod is touched on a stale status."""
        job, plan = work.job, work.plan
        if plan.delete_job:
            if writes.delete(
                self.api,
                BATCH_API_VERSION,
                "Job",
                job.metadata.namespace,
                job.metadata.name,
                uid=job.metadata.uid,
                propagation="Foreground",
            ):
                log.info(
                    "job %s: deleted, %s after it finished (ttlSecondsAfterFinished)",
                    job.key,
                    job.spec.ttl_seconds_after_finished,
                )
            return
        self._ensure_objects(work)
        version = work.written = self._write_status(job, plan.status)
        for pod in plan.delete:
            writes.delete(
                self.api, "v1", "Pod", pod.metadata.namespace, pod.name, uid=pod.metadata.uid
            )
            work.deleted.add(pod.metadata.uid)
            log.info("job %s: deleted pod %s (%s)", job.key, pod.name, plan.phase)
        if work.command is not None:
            self._done(job, work.command, plan)
        if plan.create and plan.phase in (Phase.PENDING, Phase.RUNNING):
            current = job if version is None else _with(job, plan.status, version)
            refused = self._create_pods(current, work, plan)
            if refused:
                work.written = self._report_refused(current, plan.status, refused) or version
                raise PodsRefused(f"job {job.key}: {refused[0]}")
            if plan.status.state.reason == POD_CREATE_FAILED:
                cleared = plan.status.model_copy(
                    update={
                        "state": plan.status.state.model_copy(update={"reason": "", "message": ""})
                    }
                )
                work.written = self._write_status(current, cleared) or version

    def _done(self, job: Job, command: Command, plan: Plan) -> None:
        meta = command.metadata
        writes.delete(self.api, BUS_API_VERSION, "Command", meta.namespace, meta.name, uid=meta.uid)
        taken = plan.decision.action.value == command.action
        log.info(
            "job %s: Command %s (%s) %s",
            job.key,
            meta.name,
            command.action,
            "performed" if taken else f"ignored in phase {job.phase}",
        )

    def _ensure_objects(self, work: Writes) -> None:
        uid = work.job.metadata.uid
        for build in work.owned:
            body = build()
            key = f"{work.job.key}#{uid}/{body['kind']}/{body['metadata']['name']}"
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            with self._lock:
                unchanged = self._applied.get(key) == digest
            if not unchanged:
                writes.apply(self.api, body)
                with self._lock:
                    self._applied[key] = digest
        for build in work.once:
            body = build()
            if writes.create(self.api, body):
                log.info(
                    "job %s: created %s %s", work.job.key, body["kind"], body["metadata"]["name"]
                )
            with self._lock:
                self._made.add(f"{work.job.key}#{uid}/{body['kind']}/{body['metadata']['name']}")

    def _write_status(self, job: Job, status: JobStatus) -> str | None:
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
        if (old.phase, old.reason) != (new.phase, new.reason) and new.reason != POD_CREATE_FAILED:
            log.info(
                "job %s: %s -> %s (%s%s)",
                job.key,
                old.phase or "(new)",
                new.phase,
                new.reason,
                f": {new.message}" if new.message else "",
            )
            self._event(job, "Normal", new.reason or new.phase, f"{new.phase}: {new.message}")
        return str((stored.get("metadata") or {}).get("resourceVersion", ""))

    def _create_pods(self, job: Job, work: Writes, plan: Plan) -> list[str]:
        refused: list[str] = []
        for task, index in plan.create:
            body = build_pod(job, task, index, work.plugins)
            try:
                if writes.create(self.api, body):
                    log.info(
                        "job %s: created pod %s (version %d)",
                        job.key,
                        body["metadata"]["name"],
                        job.status.version,
                    )
            except ApiStatusError as error:
                if error.status in (400, 403, 404, 422):
                    refused.append(str(error))
                else:
                    raise
        return refused

    def _report_refused(self, job: Job, status: JobStatus, refused: list[str]) -> str | None:
        message = refused[0] if len(refused) == 1 else f"{refused[0]} (and {len(refused) - 1} more)"
        log.warning("job %s: %s", job.key, message)
        self._event(job, "Warning", "FailedCreatePod", message)
        now = rfc3339(time.time())
        state = status.state.model_copy(update={"reason": POD_CREATE_FAILED, "message": message})
        conditions = [
            *status.conditions,
            JobCondition(
                status=state.phase,
                last_transition_time=now,
                reason=POD_CREATE_FAILED,
                message=message[:1024],
            ),
        ][-lifecycle.MAX_CONDITIONS :]
        if status.state.reason == POD_CREATE_FAILED and status.state.message == message:
            return None  # said already
        try:
            return self._write_status(
                job, status.model_copy(update={"state": state, "conditions": conditions})
            )
        except KubeError as error:
            log.warning("job %s: could not record the refused pods: %s", job.key, error)
            return None

    def _fail_invalid(self, job: Job, invalid: list[str]) -> str | None:
        message = "; ".join(invalid)
        if job.phase == Phase.FAILED and job.status.state.message == message:
            return None
        now = rfc3339(time.time())
        state = job.status.state.model_copy(
            update={
                "phase": Phase.FAILED,
                "reason": "InvalidJob",
                "message": message,
                "last_transition_time": now,
            }
        )
        conditions = [
            *job.status.conditions,
            JobCondition(
                status=Phase.FAILED,
                last_transition_time=now,
                reason="InvalidJob",
                message=message[:1024],
            ),
        ]
        status = job.status.model_copy(update={"state": state, "conditions": conditions})
        log.warning("job %s: cannot run: %s", job.key, message)
        return self._write_status(job, status)

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
            log.warning("job %s: could not record event %s: %s", job.key, reason, error)


def _action_of(job: Job, command: Command | None) -> Action | None:
    """The action a Command asks for; an unknown one is logged and treated as none."""
    if command is None:
        return None
    try:
        return Action(command.action)
    except ValueError:
        log.warning(
            "job %s: Command %s asks for unknown action %r; ignoring it",
            job.key,
            command.metadata.name,
            command.action,
        )
        return None


def _with(job: Job, status: JobStatus, version: str) -> Job:
    """The job as stored after its status was written."""
    meta = job.metadata.model_copy(update={"resource_version": version})
    return job.model_copy(update={"metadata": meta, "status": status})
