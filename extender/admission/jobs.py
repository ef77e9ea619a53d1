"""Job rules (`batch.volcano.sh/v1alpha1`) for CREATE: Volcano's webhook rules (and what its
schema checks), every problem at once, each naming its field. docs/admission-rules.md lists them
one by one, with where Lahar differs on purpose.

`parse_job` reads the object strictly (a string where a number belongs is a problem, not a
conversion); `check_job` then checks what the controller will rely on: tasks (names, replicas,
minAvailable, templates, dependsOn naming each known task once and forming no cycle), the job's
minAvailable, maxRetry, TTL and minSuccess, lifecycle policies, plugins (with the controller's own
argument parsing, and the tasks a plugin needs, such as mpi's master), volumes, priorityClassName
and schedulerName, the topology fields (`topology.check`), and the queue (a DNS subdomain, not
`root`, exists, Open under Open ancestors, a leaf: no child queues). Names the controller derives
are checked where they come from: pods are labelled with the job's name (63 characters at most),
Volcano refuses pod names over 63 characters, the svc plugin makes each pod name a hostname (a
DNS label) and the job name a Service name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from extender.admission.names import (
    MAX_LABEL,
    dns_1035_label,
    dns_label,
    dns_subdomain,
    label_value,
)
from extender.admission.policies import policy_problems
from extender.admission.problems import INT32, Problem, field, parse, shown
from extender.admission.queue_tree import ROOT_QUEUE, QueueLookup
from extender.admission.queues import work_queue_problems
from extender.admission.templates import template_problems
from extender.admission.topology import check as topology_problems
from extender.api.batch import Job, JobSpec, TaskSpec, pod_name
from extender.jobplugins import plugin_problems

SVC = "svc"
MAX_POD_NAME = 63  # Volcano checks pod names as qualified names
VOLCANO_POD_NAME = "with the task's position as index (as Volcano checks it), a pod is named"


def parse_job(obj: Mapping[str, Any] | None) -> tuple[Job | None, list[Problem]]:
    """The Job's metadata and spec (status is the controller's), or the problems that keep it from
    being read at all."""
    return parse(Job, obj, "Job")


def check_job(job: Job, queues: QueueLookup, warnings: list[str]) -> list[Problem]:
    """CREATE."""
    spec = job.spec
    problems = [*runnable_problems(job), *number_problems(job), *_tasks(job, warnings)]
    problems += _volcano_pod_names(job)
    problems += policy_problems(spec.policies, warnings, "spec", "policies")
    problems += _volumes(job)
    problems += _names_of_spec(spec)
    problems += _queue(spec.queue, queues)
    problems += _cycles(spec.tasks)
    problems += topology_problems(job, warnings)
    return problems


def runnable_problems(job: Job) -> list[Problem]:
    """What stops the controller from running the job at all: no task, task names that are
    missing, invalid or repeated, names it would derive that Kubernetes refuses, plugins it
    cannot run. (The controller fails such a job if one got in without the webhook.)"""
    problems = [] if job.spec.tasks else [Problem("spec.tasks", "required: at least one task")]
    return [*problems, *name_problems(job), *_plugins(job)]


def name_problems(job: Job) -> Iterator[Problem]:
    """The job's and tasks' names, and the pod names and hostnames derived from them (checked
    again on UPDATE: scaling up makes longer pod names)."""
    yield from _name(job)
    first: dict[str, int] = {}
    for index, task in enumerate(job.spec.tasks):
        at = ("spec", "tasks", index)
        if not task.name:
            yield Problem(field(*at, "name"), "required (the mutating webhook names it)")
        elif (reason := dns_label(task.name)) is not None:
            yield Problem(field(*at, "name"), f"{shown(task.name)} {reason}")
        elif task.name in first:
            other = field("spec", "tasks", first[task.name])
            yield Problem(field(*at, "name"), f"{task.name} is the name of {other} too")
        else:
            first[task.name] = index
            yield from _pod_names(job, task, at)


def number_problems(job: Job) -> Iterator[Problem]:
    """Counts in range (int32, as Volcano's API has them) and consistent: minAvailable at most
    the replicas (task and job), minSuccess reachable. Checked on CREATE and UPDATE."""
    spec = job.spec
    for index, task in enumerate(spec.tasks):
        at = ("spec", "tasks", index)
        yield from _int32(task.replicas, *at, "replicas", minimum=0)
        yield from _int32(task.min_available, *at, "minAvailable", minimum=0)
        yield from _int32(task.max_retry, *at, "maxRetry", minimum=0)
        if task.min_available is not None and task.min_available > task.replicas:
            yield Problem(
                field(*at, "minAvailable"),
                f"{task.min_available} is more than the task's {task.replicas} replicas",
            )
    for name, value in (
        ("minAvailable", spec.min_available),
        ("maxRetry", spec.max_retry),
        ("ttlSecondsAfterFinished", spec.ttl_seconds_after_finished),
        ("minSuccess", spec.min_success),
    ):
        yield from _int32(value, "spec", name, minimum=0)
    if spec.min_available > spec.replicas:
        yield Problem(
            "spec.minAvailable",
            f"{spec.min_available} is more than the tasks' {spec.replicas} replicas",
        )
    if spec.min_success is not None and spec.min_success > spec.replicas:
        yield Problem(
            "spec.minSuccess",
            f"{spec.min_success} is more than the tasks' {spec.replicas} replicas: "
            "the job could never complete",
        )


def _name(job: Job) -> Iterator[Problem]:
    name = job.metadata.name
    if not name:  # generateName: the API server names it after the mutating webhooks
        return
    if (reason := label_value(name)) is not None:
        yield Problem("metadata.name", f"{reason}: pods are labelled with the job's name")
    elif SVC in job.spec.plugins and (reason := dns_1035_label(name)) is not None:
        yield Problem("metadata.name", f"{reason}: the svc plugin names a Service after the job")


def _int32(value: int | None, *at: str | int, minimum: int) -> list[Problem]:
    if value is None or minimum <= value <= INT32:
        return []
    return [Problem(field(*at), f"must be from {minimum} to {INT32}, got {shown(value)}")]


def _tasks(job: Job, warnings: list[str]) -> Iterator[Problem]:
    names = {t.name for t in job.spec.tasks}
    for index, task in enumerate(job.spec.tasks):
        at = ("spec", "tasks", index)
        yield from policy_problems(task.policies, warnings, *at, "policies")
        yield from template_problems(task.template, *at, "template")
        if task.depends_on is not None:
            seen: dict[str, int] = {}
            for number, name in enumerate(task.depends_on.name):
                where = field(*at, "dependsOn", "name", number)
                if name not in names:
                    yield Problem(where, f"no task is named {shown(name)}")
                elif name in seen:  # Volcano counts it twice and the task never starts
                    yield Problem(
                        where,
                        f"{name} is named by {field(*at, 'dependsOn', 'name', seen[name])} too",
                    )
                else:
                    seen[name] = number


def _pod_names(job: Job, task: TaskSpec, at: tuple[str | int, ...]) -> Iterator[Problem]:
    """The longest pod name the task makes must be valid (a hostname, with the svc plugin)."""
    if not job.metadata.name or task.replicas > INT32:
        return
    longest = pod_name(job.metadata.name, task.name, max(task.replicas - 1, 0))
    hostname = SVC in job.spec.plugins
    reason = dns_label(longest) if hostname else dns_subdomain(longest)
    if reason is not None:
        role = "a hostname (svc plugin)" if hostname else "a pod name"
        yield Problem(
            field(*at, "name"), f"pods would be named {longest}, which as {role} {reason}"
        )


def _plugins(job: Job) -> Iterator[Problem]:
    for error in plugin_problems(job):
        yield Problem(error.field, error.reason)


def _volumes(job: Job) -> Iterator[Problem]:
    mounted: dict[str, int] = {}
    for index, volume in enumerate(job.spec.volumes):
        at = ("spec", "volumes", index)
        if not volume.mount_path:
            yield Problem(field(*at, "mountPath"), "required: where the pods mount the claim")
        elif ":" in volume.mount_path:
            yield Problem(
                field(*at, "mountPath"), f"{shown(volume.mount_path)} must not contain ':'"
            )
        elif volume.mount_path in mounted:
            yield Problem(
                field(*at, "mountPath"),
                f"{shown(volume.mount_path)} is mounted by "
                f"{field('spec.volumes', mounted[volume.mount_path])} already",
            )
        else:
            mounted[volume.mount_path] = index
        if bool(volume.volume_claim_name) == (volume.volume_claim is not None):
            yield Problem(
                field(*at),
                "give volumeClaimName to mount an existing claim or volumeClaim to have one "
                "made, one of the two",
            )
        elif volume.volume_claim_name and (reason := dns_subdomain(volume.volume_claim_name)):
            yield Problem(
                field(*at, "volumeClaimName"), f"{shown(volume.volume_claim_name)} {reason}"
            )


def _volcano_pod_names(job: Job) -> Iterator[Problem]:
    """Volcano refuses a job whose pod name would exceed 63 characters: it checks one name per
    task, a qualified name made with the task's position in the job where the replica index goes
    (so a job Volcano refuses is refused here, and one it accepts is not refused for this; the
    real names, up to 253 characters, are `name_problems`'s). Names `name_problems` refuses
    already, or made from a job name refused already, are not named twice."""
    name = job.metadata.name
    if not name or label_value(name) is not None:
        return
    for index, task in enumerate(job.spec.tasks):
        at = ("spec", "tasks", index)
        if not task.name or dns_label(task.name) or task.replicas > INT32:
            continue
        if any(_pod_names(job, task, at)):
            continue
        made = pod_name(name, task.name, index)
        if len(made) > MAX_POD_NAME:
            yield Problem(
                field(*at, "name"),
                f"{VOLCANO_POD_NAME} {made}, which must be at most {MAX_POD_NAME} characters "
                f"(it is {len(made)})",
            )


def _names_of_spec(spec: JobSpec) -> Iterator[Problem]:
    """What Volcano's schema asks of the job's own names: a priority class is a DNS subdomain, a
    scheduler name at most 63 characters."""
    if spec.priority_class_name and (reason := dns_subdomain(spec.priority_class_name)):
        yield Problem("spec.priorityClassName", f"{shown(spec.priority_class_name)} {reason}")
    if len(spec.scheduler_name) > MAX_LABEL:
        yield Problem(
            "spec.schedulerName",
            f"must be at most {MAX_LABEL} characters (it is {len(spec.scheduler_name)})",
        )


def _queue(name: str, queues: QueueLookup) -> list[Problem]:
    """The queue is named as Volcano's schema asks (a DNS subdomain) and fits a label value
    (pods are labelled with it); it is not `root` (which only parents queues); it exists, it
    and the queues above it are Open, and it has no child queues (Volcano's "can only submit job
    to leaf queue")."""
    reason = dns_subdomain(name) or label_value(name)
    if reason is not None:
        return [Problem("spec.queue", f"{shown(name)} {reason}")]
    if name == ROOT_QUEUE:
        return [Problem("spec.queue", "the root queue takes no jobs: it only parents queues")]
    return [Problem("spec.queue", p.reason) for p in work_queue_problems(name, queues)]


def _cycles(tasks: Sequence[TaskSpec]) -> Iterator[Problem]:
    """dependsOn must form no cycle (a task waiting on itself, directly or not, never starts)."""
    needs = {t.name: [n for n in (t.depends_on.name if t.depends_on else []) if n] for t in tasks}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start, first in needs.items():
        if start in state:
            continue
        path, stack = [start], [iter(first)]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                cycle = [*path[path.index(following) :], following]
                yield Problem(
                    "spec.tasks",
                    f"dependsOn forms a cycle ({' -> '.join(cycle)}): these tasks never start",
                )
                return
            elif following in needs and following not in state:
                state[following] = 1
                path.append(following)
                stack.append(iter(needs[following]))
