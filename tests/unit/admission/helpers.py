"""Test-side helpers for the admission rules: a `QueueLookup` over plain dicts, a JSONPatch `add`
applier (all the job defaults use), and a way to read problems as `{path: reason}`."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

from extender.admission.jobs import check_job, parse_job
from extender.admission.problems import Problem
from extender.admission.queue_tree import parent_of
from extender.api.scheduling import Queue
from tests.builders import JobBuilder, QueueBuilder, make_job, make_queue


class Queues:
    """The queues the webhook's cache holds, and the PodGroups (`namespace/name`) per queue."""

    def __init__(self, *queues: QueueBuilder | Queue) -> None:
        self.queues: dict[str, Queue] = {}
        self.groups: dict[str, list[str]] = {}
        for queue in queues:
            self.add(queue)

    def add(self, queue: QueueBuilder | Queue) -> Queues:
        model = queue.model() if isinstance(queue, QueueBuilder) else queue
        self.queues[model.metadata.name] = model
        return self

    def with_groups(self, queue: str, *groups: str) -> Queues:
        self.groups.setdefault(queue, []).extend(groups)
        return self

    def queue(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def pod_groups_in(self, queue: str) -> Sequence[str]:
        return self.groups.get(queue, [])

    def children(self, name: str) -> Sequence[Queue]:
        return [
            queue
            for child, queue in sorted(self.queues.items())
            if child != name and parent_of(queue) == name
        ]


def cluster_queues() -> Queues:
    """`default` (Open), `research` (no state yet: counts as Open), `closed` and `closing`."""
    return Queues(
        make_queue("default").state("Open"),
        make_queue("research"),
        make_queue("closed").state("Closed"),
        make_queue("closing").state("Closing"),
    )


def by_path(problems: Iterable[Problem]) -> dict[str, str]:
    """Problems as `{path: reason}` (reasons at the same path joined with ` | `)."""
    found: dict[str, str] = {}
    for problem in problems:
        found[problem.path] = (
            f"{found[problem.path]} | {problem.reason}" if problem.path in found else problem.reason
        )
    return found


def paths(problems: Iterable[Problem]) -> list[str]:
    return [p.path for p in problems]


def apply_patch(obj: dict[str, Any], patch: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A copy of `obj` with the JSONPatch (RFC 6902) applied; only `add`, the one op the job
    defaults use (on an array index it inserts, on a member it sets or replaces)."""
    result = copy.deepcopy(obj)
    for op in patch:
        assert op["op"] == "add", op
        *parents, last = [_unescape(p) for p in op["path"].split("/")[1:]]
        owner: Any = result
        for step in parents:
            owner = owner[int(step)] if isinstance(owner, list) else owner[step]
        if isinstance(owner, list):
            index = len(owner) if last == "-" else int(last)
            assert 0 <= index <= len(owner), op
            owner.insert(index, copy.deepcopy(op["value"]))
        else:
            assert isinstance(owner, dict), op
            owner[last] = copy.deepcopy(op["value"])
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def tf() -> JobBuilder:
    """A good job: `ps` (1) and `worker` (2), in the default queue."""
    return make_job("tf").task("ps").task("worker", 2)


def check(builder: JobBuilder, view: Queues | None = None) -> tuple[list[Problem], list[str]]:
    """The CREATE rules' problems and warnings for the job (which must read)."""
    job, problems = parse_job(builder.build())
    assert job is not None, problems
    warnings: list[str] = []
    return check_job(job, view or cluster_queues(), warnings), warnings


def problems_of(builder: JobBuilder, view: Queues | None = None) -> dict[str, str]:
    return by_path(check(builder, view)[0])
