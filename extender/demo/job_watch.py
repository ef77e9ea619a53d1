"""Watching the demo's Volcano Jobs as a user would with kubectl: each Job's phase, its pods bound
out of the gang's minimum and where, and (while it waits) the reason its PodGroup gives.

`JobWatch` polls the API, feeds the live table, and keeps per Job what the summary reports: when
it was submitted, when its minimum was first bound (time to start), and whether it was ever a
partial gang: some but not all of its minimum bound for longer than a gang's binding takes
(`PARTIAL_GRACE`; Lahar binds a gang's members together within a fraction of a second).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION
from extender.demo.live_table import JobRow, LiveTable
from extender.kube import condition, list_objects, pod_group_status, read
from extender.kube.client import KubeError

PARTIAL_GRACE = 2.0  # seconds a gang may be partly bound while its members' binds land
POLL = 0.25
JOB_LABEL = "volcano.sh/job-name"
FINISHED = frozenset({"Completed", "Failed", "Terminated", "Aborted"})


@dataclass
class WatchedJob:
    name: str
    submitted: float
    started: float | None = None  # when its minimum was first seen bound
    partial_since: float | None = None
    partial: bool = False  # some but not all of its minimum bound for over PARTIAL_GRACE
    peak: int = 0  # the most pods seen bound at once (a finished Job's pods go away)
    row: JobRow | None = None


@dataclass
class JobWatch:
    api: k8s.ApiClient
    namespace: str
    table: LiveTable
    clock: Callable[[], float] = time.monotonic
    records: dict[str, WatchedJob] = field(default_factory=dict)

    def submitted(self, name: str) -> None:
        self.records[name] = WatchedJob(name, self.clock())

    def until(self, what: str, done: Callable[[dict[str, JobRow]], bool], timeout: float) -> None:
        """Refresh the table until `done(rows by job)` holds; KubeError after `timeout`."""
        deadline = self.clock() + timeout
        for record in self.records.values():
            record.partial_since = None  # time between watches is not time seen partial
        while True:
            rows = self.refresh()
            if done(rows):
                self.table.release()
                return
            if self.clock() > deadline:
                raise KubeError(f"the demo waited {timeout:.0f} s for {what}")
            time.sleep(POLL)

    def refresh(self) -> dict[str, JobRow]:
        pods = list_objects(self.api, "v1", "Pod", namespace=self.namespace)
        rows = {name: self._row(record, pods) for name, record in self.records.items()}
        self.table.show(list(rows.values()))
        return rows

    def _row(self, record: WatchedJob, pods: list[dict[str, Any]]) -> JobRow:
        job = read(self.api, BATCH_API_VERSION, "Job", record.name, self.namespace) or {}
        spec, status = job.get("spec") or {}, job.get("status") or {}
        phase = str((status.get("state") or {}).get("phase") or "Submitted")
        minimum = int(spec.get("minAvailable") or 0)
        mine = [p for p in pods if _job_of(p) == record.name]
        nodes = Counter(p["spec"]["nodeName"] for p in mine if p["spec"].get("nodeName"))
        bound = sum(nodes.values())
        record.peak = max(record.peak, bound)
        self._track(record, bound, minimum)
        waiting = ""
        if bound < minimum and job:
            uid = job["metadata"]["uid"]
            found = condition(
                pod_group_status(self.api, self.namespace, f"{record.name}-{uid}"),
                "Unschedulable",
            )
            if found.get("status") == "True":
                waiting = f"{found.get('reason')}: {found.get('message')}"
        placed = ", ".join(f"{node}:{count}" for node, count in sorted(nodes.items()))
        # A finished Job's pods that did not complete are gone: show the gang as it ran.
        shown = record.peak if phase in FINISHED else bound
        record.row = JobRow(record.name, phase, shown, minimum, placed, waiting)
        return record.row

    def _track(self, record: WatchedJob, bound: int, minimum: int) -> None:
        now = self.clock()
        if minimum and bound >= minimum:
            record.started = record.started or now
            record.partial_since = None
        elif 0 < bound < minimum and record.started is None:
            record.partial_since = record.partial_since or now
            if now - record.partial_since > PARTIAL_GRACE:
                record.partial = True
        else:
            record.partial_since = None


def _job_of(pod: dict[str, Any]) -> str | None:
    labels: dict[str, str] = pod["metadata"].get("labels") or {}
    return labels.get(JOB_LABEL)
