"""One AdmissionRequest in, one `AdmissionDecision` out: which rules apply to which resource and
operation. The webhook routes each path to one of these; a request for another resource, or an
operation a rule set does not handle, is refused with the reason (the webhook configurations
never send them, so seeing one means the configuration is wrong).

Jobs and gang pods are the business of the schedulers this webhook serves (`Settings`, from
`lahar webhook --scheduler-name`), and only theirs: a Job whose `spec.schedulerName` names
another scheduler (a Volcano Job where Lahar serves only `lahar`) is admitted untouched, no
defaults and no rules, and so is such a pod. A Job naming no scheduler is the first served
scheduler's (the mutating webhook writes that name into it), and on UPDATE a Job is the webhook's
when the stored one or the new one is (so moving a Job to or from another scheduler is refused as
the change of a fixed field). Queues, PodGroups and HyperNodes belong to no scheduler: they are
always checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extender.admission import hypernodes, jobs, podgroups, pods, queues
from extender.admission.job_defaults import job_defaults
from extender.admission.job_update import check_update, unchanged
from extender.admission.names import MAX_LABEL
from extender.admission.problems import AdmissionDecision, Problem, denial_message, in_field_order
from extender.admission.queue_defaults import queue_defaults
from extender.admission.queue_tree import QueueLookup
from extender.admission.unhonoured import queue_warnings
from extender.api.admission import AdmissionRequest, Operation
from extender.api.scheduling import SERVED_SCHEDULERS

JOBS = ("batch.volcano.sh", "jobs")
QUEUES = ("scheduling.volcano.sh", "queues")
POD_GROUPS = ("scheduling.volcano.sh", "podgroups")
PODS = ("", "pods")
HYPER_NODES = ("topology.volcano.sh", "hypernodes")


@dataclass(frozen=True)
class Settings:
    """What the rules are told of the installation."""

    scheduler_name: str = "lahar"  # what a Job naming no scheduler gets: one of `served`
    # The schedulers this webhook serves: their gang pods (but a Volcano Job's) are created
    # behind Lahar's gate, their Jobs get Volcano's defaults and rules.
    served: frozenset[str] = frozenset(SERVED_SCHEDULERS)

    def __post_init__(self) -> None:
        if self.scheduler_name not in self.served:
            raise ValueError(
                f"the default scheduler name {self.scheduler_name!r} must be one of those "
                f"served ({', '.join(sorted(self.served))})"
            )

    @classmethod
    def serving(cls, names: Sequence[str]) -> Settings:
        """Serving `names` (at least one): a Job naming no scheduler gets the first."""
        if not names:
            raise ValueError("at least one scheduler name must be served")
        return cls(names[0], frozenset(names))

    def serves_job(self, job: Mapping[str, Any] | None) -> bool:
        """Whether a Job object (as sent, not yet read) is for a scheduler served: its
        `spec.schedulerName`, the default when it names none. A name no Job may have (not a
        string, or longer than Volcano's schema allows, which it refuses whatever the scheduler)
        is taken as served, so the rules say what is wrong with it."""
        spec = job.get("spec") if isinstance(job, Mapping) else None
        name = spec.get("schedulerName") if isinstance(spec, Mapping) else None
        if not isinstance(name, str) or len(name) > MAX_LABEL:
            return True
        return (name or self.scheduler_name) in self.served


@dataclass(frozen=True)
class Outcome:
    """A decision and the message a denial carries (every problem, under the object's name)."""

    decision: AdmissionDecision
    message: str = ""
    warnings: tuple[str, ...] = field(default=())


Rule = Callable[[AdmissionRequest, QueueLookup, Settings], Outcome]


def _named(kind: str, request: AdmissionRequest) -> str:
    name = request.name or "(name to be generated)"
    return f"{kind} {request.namespace}/{name}" if request.namespace else f"{kind} {name}"


def _outcome(
    kind: str,
    request: AdmissionRequest,
    problems: Sequence[Problem],
    patch: Sequence[dict[str, object]] = (),
    warnings: Sequence[str] = (),
) -> Outcome:
    if problems:
        ordered = tuple(sorted(problems, key=in_field_order))
        return Outcome(AdmissionDecision(ordered), denial_message(_named(kind, request), ordered))
    return Outcome(AdmissionDecision(patch=tuple(patch)), warnings=tuple(warnings))


def _expect(
    request: AdmissionRequest, resource: tuple[str, str], operations: Sequence[Operation]
) -> list[Problem]:
    got = (request.resource.group, request.resource.resource)
    if got != resource or request.sub_resource:
        sub = f"/{request.sub_resource}" if request.sub_resource else ""
        return [
            Problem(
                "",
                f"this endpoint admits {resource[1]}.{resource[0]}, not "
                f"{got[1]}{sub}.{got[0]}: check the webhook configuration",
            )
        ]
    if request.operation not in operations:
        allowed = ", ".join(operations)
        return [Problem("", f"operation {request.operation} is not admitted here (only {allowed})")]
    return []


def _not_served(request: AdmissionRequest, settings: Settings) -> bool:
    """A Job of another scheduler: not the new object's, nor (UPDATE) the stored one's."""
    if settings.serves_job(request.object):
        return False
    return request.operation != Operation.UPDATE or not settings.serves_job(request.old_object)


def mutate_job(request: AdmissionRequest, view: QueueLookup, settings: Settings) -> Outcome:
    problems = _expect(request, JOBS, (Operation.CREATE, Operation.UPDATE))
    if problems or _not_served(request, settings):
        return _outcome("Job", request, problems)
    job, problems = jobs.parse_job(request.object)
    if job is None:
        return _outcome("Job", request, problems)
    assert request.object is not None  # parse_job read it
    if request.operation == Operation.UPDATE and unchanged(
        request.old_object or {}, request.object, job
    ):
        return _outcome("Job", request, [])
    return _outcome("Job", request, [], job_defaults(request.object, settings.scheduler_name))


def validate_job(request: AdmissionRequest, view: QueueLookup, settings: Settings) -> Outcome:
    problems = _expect(request, JOBS, (Operation.CREATE, Operation.UPDATE))
    if problems or _not_served(request, settings):
        return _outcome("Job", request, problems)
    job, problems = jobs.parse_job(request.object)
    if job is None or request.object is None:
        return _outcome("Job", request, problems)
    warnings: list[str] = []
    if request.operation == Operation.UPDATE:
        old = request.old_object or {}
        problems = check_update(old, request.object, job, settings.scheduler_name)
    else:
        problems = jobs.check_job(job, view, warnings)
    return _outcome("Job", request, problems, warnings=warnings)


def mutate_queue(request: AdmissionRequest, view: QueueLookup, settings: Settings) -> Outcome:
    problems = _expect(request, QUEUES, (Operation.CREATE,))
    if problems or not isinstance(request.object, Mapping):
        return _outcome("Queue", request, problems)
    return _outcome("Queue", request, [], queue_defaults(request.object))


def validate_queue(request: AdmissionRequest, view: QueueLookup, settings: Settings) -> Outcome:
    operations = (Operation.CREATE, Operation.UPDATE, Operation.DELETE)
    problems = _expect(request, QUEUES, operations)
    if not problems:
        if request.operation == Operation.DELETE:
            problems = queues.check_delete(request.name, view)
        else:
            old = request.old_object if request.operation == Operation.UPDATE else None
            problems = queues.check_queue(request.object, view, old or None)
    return _outcome("Queue", request, problems, warnings=queue_warnings(request.object))


def validate_pod_group(request: AdmissionRequest, view: QueueLookup, settings: Settings) -> Outcome:
    problems = _expect(request, POD_GROUPS, (Operation.CREATE,))
    if not problems:
        problems = podgroups.check_pod_group(request.object, view)
    return _outcome("PodGroup", request, problems)


def validate_hyper_node(
    request: AdmissionRequest, view: QueueLookup, settings: Settings
) -> Outcome:
    problems = _expect(request, HYPER_NODES, (Operation.CREATE, Operation.UPDATE))
    if not problems:
        problems = hypernodes.check_hyper_node(request.object)
    warnings = hypernodes.hyper_node_warnings(request.object)
    return _outcome("HyperNode", request, problems, warnings=warnings)


def mutate_pod(request: AdmissionRequest, view: QueueLookup, settings: Settings) -> Outcome:
    problems = _expect(request, PODS, (Operation.CREATE,))
    if problems:
        return _outcome("Pod", request, problems)
    problems = pods.naming_problems(request.object, settings.served)
    return _outcome("Pod", request, problems, pods.gate_patch(request.object, settings.served))


# path -> (resource label for metrics, rule)
RULES: dict[str, tuple[str, Rule]] = {
    "/mutate/jobs": ("jobs", mutate_job),
    "/mutate/pods": ("pods", mutate_pod),
    "/mutate/queues": ("queues", mutate_queue),
    "/validate/jobs": ("jobs", validate_job),
    "/validate/queues": ("queues", validate_queue),
    "/validate/podgroups": ("podgroups", validate_pod_group),
    "/validate/hypernodes": ("hypernodes", validate_hyper_node),
}
