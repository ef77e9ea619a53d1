"""A decision over one snapshot: the policy's filters and scorers for one pod.

An `Engine` holds the policy and the per-shape node tables that outlive single calls; `session()`
opens a `Session` over the current snapshot. The session is pure: it reads and returns values. A
candidate the snapshot does not know (created a moment ago, or already deleted) fails with a
reason instead of being guessed about, and scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from extender.api.objects import Pod
from extender.api.wire import host_priority_json, host_priority_list_json
from extender.cache.snapshot import Snapshot
from extender.framework.policy import Policy
from extender.framework.status import Code
from extender.framework.table import Tables


@dataclass
class FilterOutcome:
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


def unknown_node_reason(name: str) -> str:
    return f"node {name} is not in Lahar's cache (just created, or already deleted)"


class Engine:
    """The policy and what Lahar keeps between decisions."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.tables = Tables(policy.filters, policy.scorers)

    def session(self, snapshot: Snapshot) -> Session:
        return Session(snapshot, self)


class Session:
    def __init__(self, snapshot: Snapshot, engine: Engine) -> None:
        self.snapshot = snapshot
        self.engine = engine

    def filter(self, pod: Pod, names: Sequence[str]) -> FilterOutcome:
        table = self.engine.tables.current(self.snapshot, pod.request)
        rejected, nodes = table.rejected, self.snapshot.nodes
        outcome = FilterOutcome(passed=[n for n in names if n in nodes and n not in rejected])
        if len(outcome.passed) == len(names):
            return outcome
        for name in names:
            status = rejected.get(name)
            if status is not None:
                target = (
                    outcome.unresolvable if status.code is Code.UNRESOLVABLE else outcome.failed
                )
                target[name] = status.reason
            elif name not in nodes:
                outcome.failed[name] = unknown_node_reason(name)
        return outcome

    def score(self, pod: Pod, names: Sequence[str]) -> list[tuple[str, int]]:
        """(node, 0..10) for every name, in order; unknown nodes score 0."""
        scores = self.engine.tables.current(self.snapshot, pod.request).scores
        return [(name, scores.get(name, 0)) for name in names]

    def score_reply(self, pod: Pod, names: Sequence[str]) -> bytes:
        """`score` as the encoded prioritize reply: the prioritize verb's hot path."""
        encoded = self.engine.tables.current(self.snapshot, pod.request).encoded
        elements = [encoded.get(name) or host_priority_json(name, 0) for name in names]
        return host_priority_list_json(elements)
