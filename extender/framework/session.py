"""A decision over one snapshot: the policy's filters and scorers for one pod.

An `Engine` holds the policy, the gang ledger and the per-shape node tables that outlive single
calls. It is the door for deciding a filter call: `Engine.filter` answers one (the extender's filter
verb and the simulated scheduler both ask it, never the ledger directly), and `Engine.recover`
completes the gangs a restart found partly bound. The other verbs and the writers read the ledger
(`Engine.gangs`) through its read methods. `session()` opens a `Session` over the current snapshot
for the scores and the node-by-node reasons. The session is pure: it reads and returns values. A
candidate the snapshot does not know (created a moment ago, or already deleted) fails with a reason
instead of being guessed about, and scores 0.
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
from extender.cache.state import ClusterState
from extender.framework.policy import Policy
from extender.framework.status import Code, insufficient
from extender.framework.table import NodeTable, Tables
from extender.gangs.ledger import PLAIN, Gangs, Verdict
from extender.gangs.recovery import Recovery, recover
from extender.gangs.wanting import admit_provisioned, want_nodes

# Past this many nodes holding reservations, the candidates are decoded into a set once instead
# of each such node being looked up among them.
LOOKUPS = 32


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


def _kept_inside(
    outcome: FilterOutcome,
    candidates: Candidates,
    inside: frozenset[str] | None,
    *,
    with_reasons: bool,
) -> FilterOutcome:
    """`outcome` with the candidates outside `inside` failed (None: as it is)."""
    if inside is None or outcome.gang_reason is not None:
        return outcome
    passed = outcome.passed if not outcome.everything_passed else candidates.names
    kept = [name for name in passed if name in inside]
    if len(kept) == len(passed):
        return outcome
    failed = dict(outcome.failed)
    if with_reasons:
        failed.update((name, OUTSIDE) for name in passed if name not in inside)
    return FilterOutcome(passed=kept, failed=failed, unresolvable=outcome.unresolvable)


def unknown_node_reason(name: str) -> str:
    return f"node {name} is not in Lahar's cache (just created, or already deleted)"


class Engine:
    """The policy and what Lahar keeps between decisions."""

    def __init__(self, policy: Policy, schedulers: Collection[str] = ()) -> None:
        """`schedulers`: the schedulerNames Lahar serves from the start (more are learned from
        the calls): the gangs of their pods contend before any of them is asked about, and those
        held by Lahar's gate are let in without ever being asked about."""
        self.policy = policy
        self.tables = Tables(policy.filters, policy.scorers)
        settings = policy.gang_settings
        self.gangs = (
            Gangs(settings, ordering=policy.ordering, schedulers=set(schedulers))
            if settings is not None
            else None
        )
        self.preemption = policy.preemption  # None: no preemption

    def session(self, snapshot: Snapshot) -> Session:
        return Session(snapshot, self)

    def filter(
        self,
        state: ClusterState,
        pod: Pod,
        candidates: Candidates | Sequence[str],
        *,
        fit: bool = False,
        with_reasons: bool = True,
    ) -> FilterOutcome:
        """A filter call: the gang rules' verdict first (asking may admit the pod's gang, the
        one change a filter call makes), then the capacity admitted gangs hold, less what the
        pod's own gang's slots give it. With `fit`, also the policy's own resource fit (what
        kube-scheduler's NodeResourcesFit keeps: the simulator has no kube-scheduler to run it);
        without, the candidates are taken to fit already, and only those where admitted gangs
        hold what the pod needs fail. `with_reasons=False` (with `fit` only: without it the
        failed ones always carry their reasons, few as they are) leaves the reasons out
        (`Session.filter`)."""
        if not isinstance(candidates, Candidates):
            candidates = Candidates(list(candidates), frozenset(candidates))
        view = state.view()
        verdict = PLAIN
        if self.gangs is not None:
            self.gangs.serve(pod.spec.scheduler_name)
            verdict = self.gangs.verdict(state, view.nodes, pod)
        if fit:
            outcome = self.session(view).filter(pod, candidates, verdict, with_reasons=with_reasons)
            return _kept_inside(outcome, candidates, verdict.inside, with_reasons=with_reasons)
        if verdict.reason is not None:
            return FilterOutcome(gang_reason=verdict.reason)
        held = self._held(view, pod, candidates, verdict)
        if verdict.inside is not None:
            held.update(dict.fromkeys(candidates.members - verdict.inside, OUTSIDE))
        # (`passed` left empty: reading the names would decode thousands of them for nothing)
        return FilterOutcome(failed=held, everything_passed=not held)

    def _held(
        self, view: Snapshot, pod: Pod, candidates: Candidates, verdict: Verdict
    ) -> dict[str, str]:
        """Candidates where the pod does not fit beside what admitted gangs hold, with why.
        Only the nodes holding reservations are looked at, not every candidate."""
        reserved = self.gangs.reserved() if self.gangs is not None else {}
        if not reserved:
            return {}
        nodes = view.nodes
        if len(reserved) > LOOKUPS:
            offered = [n for n in candidates.members & reserved.keys() if n in nodes]
        else:
            offered = [n for n in reserved if n in candidates and n in nodes]
        if not offered:
            return {}
        return self.session(view).held_reasons(pod, offered, reserved, verdict)

    def want_nodes(self, state: ClusterState) -> list[str]:
        """The gangs that wait for capacity the cluster lacks in a queue that buys nodes, in the
        fair order, the ones to show to an autoscaler noted (`gangs.wanting`)."""
        if self.gangs is None:
            return []
        return want_nodes(self.gangs, state, state.view().nodes)

    def admit_provisioned(self, state: ClusterState) -> list[str]:
        """Admit the gangs whose ProvisioningRequest is Provisioned onto the new capacity, ahead
        of the fair order, the longest provisioned first, as soon as each fits
        (`gangs.wanting`); the keys admitted."""
        if self.gangs is None:
            return []
        return admit_provisioned(self.gangs, state, state.view().nodes)

    def recover(self, state: ClusterState) -> list[Recovery]:
        """After a restart, before any filter call: admit the partly bound gangs that can be
        completed, ahead of every other (`gangs.recovery`); what became of each."""
        if self.gangs is None:
            return []
        return recover(self.gangs, state, state.view().nodes)


class Session:
    def __init__(self, snapshot: Snapshot, engine: Engine) -> None:
        self.snapshot = snapshot
        self.engine = engine

    def filter(
        self,
        pod: Pod,
        candidates: Candidates | Sequence[str],
        verdict: Verdict = PLAIN,
        *,
        with_reasons: bool = True,
    ) -> FilterOutcome:
        """Which candidates can take the pod; every other one with its reason.

        The gang rules' `verdict` first (a member of a gang that is not admitted fails
        everywhere), then resource fit from the node tables, then the capacity admitted gangs
        hold (the pod's own slot excepted). Works on sets,
        in C: at 5,000 candidates a Python loop per name would cost more than the decision. When
        some nodes fail, `passed` is in no particular order (the protocol has none). Without
        `with_reasons` only `passed` is filled (the simulator needs no reason per failed node),
        from the nodes the table passes: in a full cluster a few, where the rejected are most.
        """
        if not isinstance(candidates, Candidates):
            candidates = Candidates(list(candidates), frozenset(candidates))
        if verdict.reason is not None:
            failed = dict.fromkeys(candidates.names, verdict.reason) if with_reasons else {}
            return FilterOutcome(failed=failed, gang_reason=verdict.reason)
        table = self.engine.tables.current(self.snapshot, pod.request)
        reserved = self.engine.gangs.reserved() if self.engine.gangs is not None else {}
        if not with_reasons:
            return self._passing(pod, candidates, table, reserved, verdict)
        membership = self.snapshot.membership
        unknown: frozenset[str] | set[str] = frozenset()
        if candidates.all_known_at != membership or self.snapshot.changes is None:
            unknown = candidates.members.difference(self.snapshot.nodes)
            if not unknown:
                candidates.all_known_at = membership
        rejected = table.rejected.keys() & candidates.members
        holding = (reserved.keys() & candidates.members) - rejected - unknown
        held = self._held(pod, holding, reserved, verdict)
        if not unknown and not rejected and not held:
            return FilterOutcome(passed=candidates.names, everything_passed=True)
        nodes = self.snapshot.nodes
        outcome = FilterOutcome(
            passed=list(candidates.members - rejected - unknown - held.keys()),
            failed={n: unknown_node_reason(n) for n in unknown},
        )
        outcome.failed.update(
            (n, _reserved_reason(pod, nodes[n], *lack)) for n, lack in held.items()
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
        reserved: Mapping[str, Resources],
        verdict: Verdict,
    ) -> FilterOutcome:
        """`filter` without reasons: the candidates the table passes (known nodes only, so
        when every candidate is among them none is unknown), less those admitted gangs hold."""
        passing = table.passing() & candidates.members
        held = self._held(pod, reserved.keys() & passing, reserved, verdict)
        if not held and len(passing) == len(candidates.members):
            return FilterOutcome(passed=candidates.names, everything_passed=True)
        return FilterOutcome(passed=list(passing - held.keys()))

    def held_reasons(
        self,
        pod: Pod,
        names: Collection[str],
        reserved: Mapping[str, Resources],
        verdict: Verdict = PLAIN,
    ) -> dict[str, str]:
        """Of `names` (known nodes where admitted gangs hold capacity), those the pod may not
        have beside what they hold, each with why: what the filter verb adds to kube-scheduler's
        own resource fit."""
        nodes = self.snapshot.nodes
        return {
            name: _reserved_reason(pod, nodes[name], *lack)
            for name, lack in self._held(pod, names, reserved, verdict).items()
        }

    def _held(
        self,
        pod: Pod,
        names: Collection[str],
        reserved: Mapping[str, Resources],
        verdict: Verdict,
    ) -> dict[str, tuple[str, Resources]]:
        """Of `names` (known nodes where admitted gangs hold capacity, `reserved`), those where
        the pod does not fit beside what they hold (less what its gang's slots there may give
        it, `Verdict.credit`): the resource it lacks and what is held there."""
        held: dict[str, tuple[str, Resources]] = {}
        credit = verdict.credit
        nodes = self.snapshot.nodes
        for name in names:
            amount = reserved[name]
            if name in credit:
                amount = amount - credit[name]
            short = pod.request.shortfall(nodes[name].free - amount)
            if short is not None:
                held[name] = (short, amount)
        return held

    def fitting(self, pod: Pod, names: Sequence[str]) -> list[str]:
        """Of `names`, in order, the nodes the policy's filters pass for the pod (resource fit:
        what kube-scheduler's NodeResourcesFit keeps), reservations aside."""
        passing = self.engine.tables.current(self.snapshot, pod.request).passing()
        return [name for name in names if name in passing]

    def score(self, pod: Pod, names: Sequence[str]) -> list[tuple[str, int]]:
        """(node, 0..10) for every name, in order; unknown nodes score 0."""
        scores = self.engine.tables.current(self.snapshot, pod.request).scores
        return [(name, scores.get(name, 0)) for name in names]

    def best(self, pod: Pod, names: Collection[str]) -> set[str]:
        """The names scoring highest for `pod` (every one when all tie): the nodes
        kube-scheduler chooses among when Lahar's score decides. Intersects the sets of nodes
        per score, highest first, instead of looking up every name."""
        table = self.engine.tables.current(self.snapshot, pod.request)
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
        encoded = self.engine.tables.current(self.snapshot, pod.request).encoded
        return host_priority_list_json(list(filter(None, map(encoded.get, names))))


def _reserved_reason(pod: Pod, node: NodeInfo, short: str, reserved: Resources) -> str:
    """Why the pod cannot have what admitted gangs hold on `node` (`Session._held`)."""
    reason = insufficient(short, pod.request[short], node.free[short])
    return (
        f"{reason} of which {format_units(reserved[short], short)} is reserved for admitted gangs"
    )
