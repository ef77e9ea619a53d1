"""One reconcile of one Job, on the event loop: read the store, plan (pure), prepare the writes,
hand them to the `JobWriter` in a worker thread, and tell the store what was written.

The store is touched only here, never from the thread: before the writes the pods to delete are
recorded as the controller's own (so their deletion is not taken for an eviction); afterwards the
resourceVersion written is recorded (so the next reconcile waits until the cache shows it) and
deletions never sent are forgotten. A job the controller cannot run (an unknown plugin, no tasks,
two tasks of one name) is Failed at once, with the reason in its status and an Event. A job for a
scheduler the controller does not serve (`served`) is not looked at: nothing is written, its
Commands stay, and only DEBUG says so.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Collection

from kubernetes import client as k8s

from extender.admission.jobs import runnable_problems
from extender.admission.unhonoured import job_fields
from extender.api.batch import Action, Command, Job, Phase, pod_name
from extender.api.job_groups import build_pod_group
from extender.api.log_fields import about_job
from extender.controller import lifecycle
from extender.controller.job_objects import volume_claims
from extender.controller.lifecycle import Plan
from extender.controller.served import Served
from extender.controller.store import JobStore
from extender.controller.writer import JobWriter, Writes
from extender.jobplugins import make_plugins

log = logging.getLogger(__name__)

GROUP_PHASES = (Phase.PENDING, Phase.RUNNING, Phase.RESTARTING)
COUNTS_EVERY = 1.0  # seconds between status writes of a job that change only its pod counts


def problems(job: Job) -> list[str]:
    """What makes the job impossible to run, each naming its field (the webhook's own rules: a
    job gets here with them broken only if it was created without the webhook)."""
    return [str(problem) for problem in runnable_problems(job)]


class Reconciler:
    def __init__(
        self,
        api: k8s.ApiClient,
        store: JobStore,
        schedulers: Collection[str] = (),
        served: Served | None = None,
    ) -> None:
        self.store = store
        self.writer = JobWriter(api, schedulers)
        self._counted: dict[str, float] = {}  # job key -> when its status was last written
        self.served = served or Served()

    async def __call__(self, key: str) -> float | None:
        store = self.store
        job = store.jobs.get(key)
        if job is None or not self.served.serves(job):
            self._leave(key, job)
            return None
        if not store.fresh(key):
            return 0.05  # our last write is not in the cache yet: never act on an older copy
        if await self._failed_invalid(job):
            return None
        evicted = store.take_evicted(key)
        command = store.next_command(key)
        plan = lifecycle.plan(
            job, store.pods_of(job), evicted, time.time(), command_action(job, command)
        )
        if plan.decision.commanded:
            store.restore_evicted(key, evicted)  # a Command decided: policies see them next
        now = time.monotonic()
        plan.create = [
            (task, index)
            for task, index in plan.create
            if not store.creating(job, pod_name(job.metadata.name, task.name, index), now)
        ]
        if not evicted and command is None and (wait := self._counts_wait(job, plan, now)):
            return wait  # only pod counts moved: written with the next change, or then
        work = self._prepare(job, plan)
        work.command = command
        if not job.status.state.phase:  # a new job: said once, before its first status
            work.unhonoured = [str(item) for item in job_fields(job)]
        for pod in plan.delete:
            store.expect_deletion(pod.metadata.uid)
        try:
            await asyncio.to_thread(self.writer.write, work)
        except BaseException:
            store.restore_evicted(key, evicted)
            for pod in plan.delete:  # deletions never sent are not the controller's
                if pod.metadata.uid not in work.deleted:
                    store.unexpect_deletion(pod.metadata.uid)
            raise
        finally:
            if work.written:
                store.wrote(key, work.written)
                self._counted[key] = time.monotonic()
            store.expect_creation(job, work.created, time.monotonic())
        waits = [d for d in (plan.requeue_after, work.recheck_after) if d is not None]
        return min(waits) if waits else None

    async def _failed_invalid(self, job: Job) -> bool:
        """Whether the job cannot run (`problems`): then it is Failed, saying why."""
        invalid = problems(job)
        if not invalid:
            return False
        written = await asyncio.to_thread(self.writer.fail_invalid, job, invalid)
        if written:
            self.store.wrote(job.key, written)
        return True

    def _counts_wait(self, job: Job, plan: Plan, now: float) -> float | None:
        """Seconds to wait before writing a status that differs from the job's only in pod
        counts (a gang's pods change phase one after another): at most one such write per job
        every `COUNTS_EVERY` seconds. None: write now (a new phase, pods to create or delete,
        or nothing written lately)."""
        if plan.create or plan.delete or plan.delete_job or plan.requeue_after is not None:
            return None
        if plan.status.state != job.status.state or plan.status == job.status:
            return None
        since = self._counted.get(job.key)
        if since is None or now - since >= COUNTS_EVERY:
            return None
        return COUNTS_EVERY - (now - since)

    def _leave(self, key: str, job: Job | None) -> None:
        """Nothing to do for `key`: the job is gone (forget its objects), or it is for a
        scheduler not served here. Either way its pods' going evicted nothing this controller
        must act on."""
        self.store.take_evicted(key)
        if job is None:
            self.writer.forget(key)
            self._counted.pop(key, None)
        else:
            log.debug(
                "job %s: for scheduler %s, not served here; left alone",
                key,
                self.served.scheduler_of(job),
                extra=about_job(key),
            )

    def _prepare(self, job: Job, plan: Plan) -> Writes:
        """The objects the job's pods need, while it may have pods: its PodGroup when it is
        missing or its spec changed, the plugins' objects and the volume claims."""
        work = Writes(job, plan)
        if plan.delete_job or plan.phase not in GROUP_PHASES:
            return work
        work.namesake = self.store.namesake_left(job)
        work.plugins = make_plugins(job.spec.plugins)
        group = build_pod_group(job)
        current = self.store.group_of(job)
        work.admitted = current is not None and current.admitted
        shown = (
            None if current is None else current.spec.model_dump(by_alias=True, exclude_none=True)
        )
        if shown is None or _differs(group["spec"], shown):
            work.owned.append(functools.partial(dict, group))
        resources = dict(plan.status.controlled_resources)
        for plugin in work.plugins:
            resources[f"plugin-{plugin.name}"] = plugin.name
            for item in plugin.objects(job):
                if item.replace:
                    work.owned.append(item.build)
                elif not self.writer.made(job, item.kind, item.name):
                    work.once.append(item.build)
        for claim in volume_claims(job):
            if not self.writer.made(job, claim["kind"], claim["metadata"]["name"]):
                work.once.append(functools.partial(dict, claim))
        plan.status = plan.status.model_copy(update={"controlled_resources": resources})
        return work


def _differs(wanted: dict[str, object], current: dict[str, object]) -> bool:
    """The PodGroup spec the job wants is not the one it has (minResources as the server
    normalises its quantities is not compared)."""
    return any(current.get(k) != v for k, v in wanted.items() if k != "minResources")


def command_action(job: Job, command: Command | None) -> Action | None:
    """The action a Command asks for; an unknown one, or one for an earlier job of the same name
    (another uid), is logged and treated as none (the Command is deleted all the same)."""
    if command is None:
        return None
    target = command.target
    if target is not None and target.uid and target.uid != job.metadata.uid:
        log.warning(
            "job %s: Command %s is for an earlier job of this name (uid %s); ignoring it",
            job.key,
            command.metadata.name,
            target.uid,
            extra=about_job(job.key),
        )
        return None
    try:
        return Action(command.action)
    except ValueError:
        log.warning(
            "job %s: Command %s asks for unknown action %r; ignoring it",
            job.key,
            command.metadata.name,
            command.action,
            extra=about_job(job.key),
        )
        return None
