"""A decision over one snapshot: the policy's filters and scorers for one pod.

A `Session` reads one snapshot through the policy's per-shape node tables (`framework.table`, kept
by the `framework.engine.Engine` that opens it) and the capacity admitted gangs reserve per node,
and answers the fit, the scores and the node-by-node reasons. It knows nothing of gangs: the gang
rules' refusal of the pod and the credit its own gang's slots give it come in as plain values.
The session is pure: it reads and returns values. A candidate the snapshot does not know (created
a moment ago, or already deleted) fails with a reason instead of being guessed about, and scores
0.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from extender.api.candidates import Candidates
from extender.api.objects import Pod
from extender.api.quantity import format_units
from extender.api.resources import Resources
from extender.api.wire import host_priority_list_json
from extender.cache.snapshot import NodeInfo, Snapshot
from extender.framework.status import Code, insufficient
from extender.framework.table import NodeTable, Tables


@dataclass
class FilterOutcome:
    """Which candidates a pod may go to. `gang_reason`: the gang rules refuse the pod on every
    node, for that reason (`failed` then names each candidate with it only when the policy's own
    fit was asked for, with reasons). Else `failed` and `unresolvable` name the candidates that
    fail, with why; the others pass. `passed` lists them only when the policy's own fit was asked
    for (when everything passed, it is the candidate list itself); without it the candidates not
    failed pass, `everything_passed` when none failed, and the list is not decoded to say so."""

    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)
    everything_passed: bool = False
    gang_reason: str | None = None


OUTSIDE = "outside the HyperNode its gang's networkTopology keeps its pods in"


def unknown_node_reason(name: str) -> str:
    return f"node {name} is not in Lahar's cache (just created, or already deleted)"


NO_CREDIT: Mapping[str, Resources] = {}


class Session:
    def __init__(
        self, snapshot: Snapshot, tables: Tables, reserved: Mapping[str, Resources]
    ) -> None:
        """`reserved`: per node, the capacity admitted gangs reserve there."""
        self.snapshot, self.tables, self.reserved = snapshot, tables, reserved

    def fit(
        self,
        pod: Pod,
        candidates: Candidates | Sequence[str],
        *,
        refusal: str | None = None,
        credit: Mapping[str, Resources] = NO_CREDIT,
        with_reasons: bool = True,
    ) -> FilterOutcome:
        """Which candidates the pod fits on by the policy's node plugins, beside what admitted
        gangs reserve; every other one with its reason. (`Engine.filter` answers a filter call:
        it decides the gang rules, then asks this with their verdict, or only for the reserved
        capacity when kube-scheduler has checked the fit.)

        The gang rules' `refusal` first (a member of a gang that is not admitted fails
        everywhere), then resource fit from the node tables, then the capacity admitted gangs
        reserve (less what its gang's slots there may give it, `credit`). Works on sets,
        in C: at 5,000 candidates a Python loop per name would cost more than the decision. When
        some nodes fail, `passed` is in no particular order (the protocol has none). Without
        `with_reasons` only `passed` is filled (the simulator needs no reason per failed node),
        from the nodes the table passes: in a full cluster a few, where the rejected are most.
        """
        if not isinstance(candidates, Candidates):
            candidates = Candidates(list(candidates), frozenset(candidates))
        if refusal is not None:
            failed = dict.fromkeys(candidates.names, refusal) if with_reasons else {}
            return FilterOutcome(failed=failed, gang_reason=refusal)
        table = self.tables.current(self.snapshot, pod.request)
        reserved = self.reserved
        if not with_reasons:
            return self._passing(pod, candidates, table, credit)
        membership = self.snapshot.membership
        unknown: frozenset[str] | set[str] = frozenset()
        if candidates.all_known_at != membership or self.snapshot.changes is None:
            unknown = candidates.members.difference(self.snapshot.nodes)
            if not unknown:
                candidates.all_known_at = membership
        rejected = table.rejected.keys() & candidates.members
        reserving = (reserved.keys() & candidates.members) - rejected - unknown
        short = self._short_of_reserved(pod, reserving, credit)
        if not unknown and not rejected and not short:
            return FilterOutcome(passed=candidates.names, everything_passed=True)
        nodes = self.snapshot.nodes
        outcome = FilterOutcome(
            passed=list(candidates.members - rejected - unknown - short.keys()),
            failed={n: unknown_node_reason(n) for n in unknown},
        )
        outcome.failed.update(
            (n, _reserved_reason(pod, nodes[n], *lack)) for n, lack in short.items()
        )
        for name in rejected:
            status = table.rejected[name]
            if status.code is Code.UNRESOLVABLE:
                outcome.unresolvable[name] = status.reason
            else:
                outcome.failed[name] = status.reason
        return outcome

    def _passing(
        self,
        pod: Pod,
        candidates: Candidates,
        table: NodeTable,
        credit: Mapping[str, Resources],
    ) -> FilterOutcome:
        """`filter` without reasons: the candidates the table passes (known nodes only, so
        when every candidate is among them none is unknown), less those where what admitted
        gangs reserve leaves the pod short."""
        passing = table.passing() & candidates.members
        short = self._short_of_reserved(pod, self.reserved.keys() & passing, credit)
        if not short and len(passing) == len(candidates.members):
            return FilterOutcome(passed=candidates.names, everything_passed=True)
        return FilterOutcome(passed=list(passing - short.keys()))

    def reserved_reasons(
        self,
        pod: Pod,
        names: Collection[str],
        credit: Mapping[str, Resources] = NO_CREDIT,
    ) -> dict[str, str]:
        """Of `names` (known nodes where admitted gangs reserve capacity), those the pod may not
        have beside what they reserve, each with why: what the filter verb adds to
        kube-scheduler's own resource fit."""
        nodes = self.snapshot.nodes
        return {
            name: _reserved_reason(pod, nodes[name], *lack)
            for name, lack in self._short_of_reserved(pod, names, credit).items()
        }

    def _short_of_reserved(
        self,
        pod: Pod,
        names: Collection[str],
        credit: Mapping[str, Resources],
    ) -> dict[str, tuple[str, Resources]]:
        """Of `names` (known nodes where admitted gangs reserve capacity), those where the pod
        does not fit beside what they reserve (less what its gang's slots there may give it,
        `credit`): the resource it lacks and what is reserved there."""
        short: dict[str, tuple[str, Resources]] = {}
        reserved = self.reserved
        nodes = self.snapshot.nodes
        for name in names:
            amount = reserved[name]
            if name in credit:
                amount = amount - credit[name]
            lacking = pod.request.shortfall(nodes[name].free - amount)
            if lacking is not None:
                short[name] = (lacking, amount)
        return short

    def fitting(self, pod: Pod, names: Sequence[str]) -> list[str]:
        """Of `names`, in order, the nodes the policy's filters pass for the pod (resource fit:
        what kube-scheduler's NodeResourcesFit keeps), reservations aside."""
        passing = self.tables.current(self.snapshot, pod.request).passing()
        return [name for name in names if name in passing]

    def score(self, pod: Pod, names: Sequence[str]) -> list[tuple[str, int]]:
        """(node, 0..10) for every name, in order; unknown nodes score 0."""
        scores = self.tables.current(self.snapshot, pod.request).scores
        return [(name, scores.get(name, 0)) for name in names]

    def best(self, pod: Pod, names: Collection[str]) -> set[str]:
        """The names scoring highest for `pod` (every one when all tie): the nodes
        kube-scheduler chooses among when Lahar's score decides. Intersects the sets of nodes
        per score, highest first, instead of looking up every name."""
        table = self.tables.current(self.snapshot, pod.request)
        pool = names if isinstance(names, set | frozenset) else set(names)
        ranked = table.by_score()
        for score in sorted(ranked, reverse=True):
            nodes = ranked[score]
            hit = nodes & pool if len(nodes) < len(pool) else pool & nodes
            if hit:
                return set(hit)
        return set(pool)  # none scored: nodes the table does not know score 0

    def score_reply(self, pod: Pod, names: Sequence[str]) -> bytes:
        """`score` as the encoded prioritize reply, the prioritize verb's hot path: the nodes
        scoring above 0, in order. kube-scheduler adds an extender's score only to the nodes it
        lists, so leaving out a 0 changes no total, and at thousands of nodes of one shape (an
        empty cluster, small pods on big nodes) most of the reply was zeros to encode, send and
        decode in the scheduler's one scheduling loop."""
        encoded = self.tables.current(self.snapshot, pod.request).encoded
        return host_priority_list_json(list(filter(None, map(encoded.get, names))))


def _reserved_reason(pod: Pod, node: NodeInfo, short: str, reserved: Resources) -> str:
    """Why the pod cannot have what admitted gangs reserve on `node`
    (`Session._short_of_reserved`)."""
    reason = insufficient(short, pod.request[short], node.free[short])
    return (
        f"{reason} of which {format_units(reserved[short], short)} is reserved for admitted gangs"
    )
