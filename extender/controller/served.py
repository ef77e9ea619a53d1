"""Which Jobs this controller reconciles: those whose `spec.schedulerName` is one of the scheduler
names it serves (`lahar controller --scheduler-name`, as Volcano's vc-controller-manager has the
flag). Pure.

The default is `lahar` and `volcano`, the two profiles of Lahar's kube-scheduler
(`policy/kube-scheduler-config.yaml`). A Job naming no scheduler counts as the first name served:
the name Lahar's webhook, given the same names, writes into such a Job (`lahar` by default), so
one reaches the controller without a name only when it was created without the webhook. A Job
for another scheduler is left to whoever serves that scheduler: no pods, no PodGroup, no status,
its Commands left in place.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.api.batch import Job
from extender.api.scheduling import SERVED_SCHEDULERS


class Served:
    """The scheduler names this controller serves, in the order given (the first is the one a Job
    naming none counts as)."""

    def __init__(self, names: Sequence[str] = SERVED_SCHEDULERS) -> None:
        ordered = tuple(dict.fromkeys(names))
        if not ordered:
            raise ValueError("at least one scheduler name is served")
        self.names = ordered
        self.unnamed = ordered[0]

    def scheduler_of(self, job: Job) -> str:
        """The scheduler the Job is for: its own, or the first served when it names none."""
        return job.spec.scheduler_name or self.unnamed

    def serves(self, job: Job) -> bool:
        return self.scheduler_of(job) in self.names
