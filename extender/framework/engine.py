"""The engine's one door: every decision, command and reading of what the engine keeps between
calls goes through `Engine`.

The engine (`gangs/`, the gang rules and the fair order; `preemption/`, whom to evict) keeps state
between calls: the ledger of admitted, refused and backed-off gangs with its cache of the fair-order
walk, the book of what was asked of the autoscaler, the preemption loop. Only this module imports
the engine's packages (an import-linter contract in pyproject.toml keeps it so), and the verbs,
the bind barrier, the waker, the status and queue writers, the provisioner, the preemptor, the
app's timers and the simulator call `Engine`'s methods: the extender and the simulator decide by
the same code through the same entry points, and nothing outside can change the engine's state
but through a method named for what it does.

The clock is handed in at construction (the monotonic clock in the extender, virtual time in the
simulator) and is the only time the engine reads; so is the event hub (`cache.events`) the engine
says what it decided into (`gangs.events`: a gang admitted, released, rejected, shown), the one
the process's cluster state publishes into too.

What crosses the door besides `Engine` is the engine's vocabulary, re-exported below: values (a
gang's view, a queue's, a refusal and its cause, a slot, a preemption) and pure functions of the
cluster state or of such values (`view_gang`, `queue_mode`, the provisioning request's body):
reading them changes nothing the engine keeps.

With the gang plugin off (`gang_rules` False) the engine decides by the policy's node plugins
alone: the gang methods answer as for a cluster with no gang (nothing admitted, refused or
reserved) and the commands do nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet

from extender.api.candidates import Candidates
from extender.api.engine_settings import GangSettings, PreemptionSettings
from extender.api.objects import Pod
from extender.api.resources import Resources
from extender.cache.events import Events
from extender.cache.snapshot import Snapshot
from extender.cache.state import ClusterState
from extender.framework.policy import Policy
from extender.framework.session import OUTSIDE, FilterOutcome, Session
from extender.framework.table import Tables
from extender.gangs.events import GangAdmitted, GangRejected, GangReleased, GangShown
from extender.gangs.fairness import dominant_share, share
from extender.gangs.ledger import PLAIN, Gangs, Verdict
from extender.gangs.members import GangView, view_gang
from extender.gangs.order import Order
from extender.gangs.placement import Room, Slot
from extender.gangs.provisioning import (
    Create,
    Delete,
    Plan,
    pod_sets,
    request_body,
    template_body,
    template_name,
)
from extender.gangs.provisioning import plan as provisioning_plan
from extender.gangs.queue_tree import QueueTree
from extender.gangs.queues import QueueView
from extender.gangs.recovery import Recovery, recover
from extender.gangs.refusals import WANTS_CAPACITY, Cause, Refusal, Rejection
from extender.gangs.reservations import Admission
from extender.gangs.scale_up import queue_mode, queue_modes, wants_nodes
from extender.gangs.topology import Topology, stale_node_counts
from extender.gangs.wanting import admit_provisioned, want_nodes
from extender.preemption.loop import CarryOut, PreemptionLoop, Sleep
from extender.preemption.plan import Asked, Preemption, Protected, asked_for, protected_victims
from extender.preemption.victims import Unit, cost

__all__ = [
    "OUTSIDE",
    "WANTS_CAPACITY",
    "Admission",
    "Asked",
    "Cause",
    "Create",
    "Delete",
    "Engine",
    "FilterOutcome",
    "GangAdmitted",
    "GangRejected",
    "GangReleased",
    "GangShown",
    "GangView",
    "Order",
    "Plan",
    "Preemption",
    "Protected",
    "QueueTree",
    "QueueView",
    "Recovery",
    "Refusal",
    "Rejection",
    "Room",
    "Slot",
    "Topology",
    "Unit",
    "cost",
    "dominant_share",
    "pod_sets",
    "queue_mode",
    "queue_modes",
    "request_body",
    "share",
    "stale_node_counts",
    "template_body",
    "template_name",
    "view_gang",
    "wants_nodes",
]

# Past this many nodes with reservations, the candidates are decoded into a set once instead
# of each such node being looked up among them.
LOOKUPS = 32


class Engine:
    """The policy and what Lahar keeps between decisions."""

    def __init__(
        self,
        policy: Policy,
        schedulers: Collection[str] = (),
        *,
        clock: Callable[[], float] = time.monotonic,
        events: Events | None = None,
    ) -> None:
        """`schedulers`: the schedulerNames Lahar serves from the start (more are learned from
        the calls): the gangs of their pods contend before any of them is asked about, and those
        held by Lahar's gate are let in without ever being asked about. `clock`: seconds, the
        only time the engine reads. `events`: the hub the engine says what it decided into
        (`gangs.events`; the process hands in the one its cluster state uses; a hub of its own
        when none is given)."""
        self.policy = policy
        self.tables = Tables(policy.filters, policy.scorers)
        self._clock = clock
        self.events = events if events is not None else Events()
        settings = policy.gang_settings
        self._gangs = (
            Gangs(
                settings,
                clock=clock,
                ordering=policy.ordering,
                schedulers=set(schedulers),
                events=self.events,
            )
            if settings is not None
            else None
        )
        self.preemption = policy.preemption  # None: no preemption
        self._loop: PreemptionLoop | None = None

    # -- what the policy turns on --------------------------------------------------------------

    def clock(self) -> float:
        """The engine's time now (seconds; the clock it was handed)."""
        return self._clock()

    @property
    def gang_rules(self) -> bool:
        """Whether the policy turns the gang rules on (the gang plugin)."""
        return self._gangs is not None

    @property
    def gang_settings(self) -> GangSettings:
        """The gang plugin's settings (its defaults when it is off)."""
        return self._gangs.settings if self._gangs is not None else GangSettings()

    @property
    def schedulers(self) -> AbstractSet[str]:
        """The schedulerNames Lahar serves: those it started with and those it was asked for."""
        return self._gangs.schedulers if self._gangs is not None else frozenset()

    # -- deciding ------------------------------------------------------------------------------

    def session(self, snapshot: Snapshot) -> Session:
        return Session(snapshot, self.tables, self.reserved())

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
        one change a filter call makes), then the capacity admitted gangs reserve, less what the
        pod's own gang's slots give it. With `fit`, also the policy's own resource fit (what
        kube-scheduler's NodeResourcesFit keeps: the simulator has no kube-scheduler to run it);
        without, the candidates are taken to fit already, and only those where admitted gangs
        reserve what the pod needs fail. `with_reasons=False` (with `fit` only: without it the
        failed ones always carry their reasons, few as they are) leaves the reasons out
        (`Session.fit`)."""
        if not isinstance(candidates, Candidates):
            candidates = Candidates(list(candidates), frozenset(candidates))
        view = state.view()
        verdict = PLAIN
        if self._gangs is not None:
            self._gangs.serve(pod.spec.scheduler_name)
            verdict = self._gangs.verdict(state, view.nodes, pod)
        if fit:
            # (without reasons, a refusal's words are not worked out: "" refuses as well)
            refused = verdict.refusal is not None
            outcome = self.session(view).fit(
                pod,
                candidates,
                refusal=verdict.reason if with_reasons else ("" if refused else None),
                credit=verdict.credit,
                with_reasons=with_reasons,
            )
            return _kept_inside(outcome, candidates, verdict.inside, with_reasons=with_reasons)
        if verdict.reason is not None:
            return FilterOutcome(gang_reason=verdict.reason)
        failed = self._short_of_reserved(view, pod, candidates, verdict)
        if verdict.inside is not None:
            failed.update(dict.fromkeys(candidates.members - verdict.inside, OUTSIDE))
        # (`passed` left empty: reading the names would decode thousands of them for nothing)
        return FilterOutcome(failed=failed, everything_passed=not failed)

    def _short_of_reserved(
        self, view: Snapshot, pod: Pod, candidates: Candidates, verdict: Verdict
    ) -> dict[str, str]:
        """Candidates where the pod does not fit beside what admitted gangs reserve, with why.
        Only the nodes with reservations are looked at, not every candidate."""
        reserved = self.reserved()
        if not reserved:
            return {}
        nodes = view.nodes
        if len(reserved) > LOOKUPS:
            offered = [n for n in candidates.members & reserved.keys() if n in nodes]
        else:
            offered = [n for n in reserved if n in candidates and n in nodes]
        if not offered:
            return {}
        return self.session(view).reserved_reasons(pod, offered, verdict.credit)

    def recover(self, state: ClusterState) -> list[Recovery]:
        """After a restart, before any filter call: admit the partly bound gangs that can be
        completed, ahead of every other (`gangs.recovery`); what became of each."""
        if self._gangs is None:
            return []
        return recover(self._gangs, state, state.view().nodes)

    def let_in(self, state: ClusterState) -> list[str]:
        """Admit, in the fair order, the gangs Lahar's gate holds whose turn fits, within
        `max_pods_in_flight` (`Gangs.let_in`); the keys admitted."""
        if self._gangs is None:
            return []
        return self._gangs.let_in(state, state.view().nodes)

    def admissible(self, state: ClusterState) -> list[str]:
        """The parked gangs the fair order would admit now, in that order (`Gangs.admissible`)."""
        if self._gangs is None:
            return []
        return self._gangs.admissible(state, state.view().nodes)

    def want_nodes(self, state: ClusterState) -> list[str]:
        """The gangs that wait for capacity the cluster lacks in a queue that buys nodes, in the
        fair order, the ones to show to an autoscaler noted (`gangs.wanting`)."""
        if self._gangs is None:
            return []
        return want_nodes(self._gangs, state, state.view().nodes)

    def admit_provisioned(self, state: ClusterState) -> list[str]:
        """Admit the gangs whose ProvisioningRequest is Provisioned onto the new capacity, ahead
        of the fair order, the longest provisioned first, as soon as each fits
        (`gangs.wanting`); the keys admitted."""
        if self._gangs is None:
            return []
        return admit_provisioned(self._gangs, state, state.view().nodes)

    def expire(self) -> list[str]:
        """Release admissions that made no progress for `reservation_timeout`, and back off the
        gangs let in that did not come for their capacity in that time; their keys."""
        return self._gangs.expire() if self._gangs is not None else []

    def order(self, state: ClusterState) -> Order:
        """The fair order of the waiting gangs, every turn taken (with the gang rules on)."""
        return self._ledger().order(state, state.view().nodes)

    def _ledger(self) -> Gangs:
        """The gang ledger, for what only the gang rules can answer."""
        if self._gangs is None:
            raise RuntimeError("the policy has no gang plugin: there is no fair order to read")
        return self._gangs

    # -- the bind barrier's commands -----------------------------------------------------------

    def consume(self, uid: str, node: str | None = None) -> Slot | None:
        """The member `uid` binds (to `node`): its gang's slot for it is used up; the slot."""
        return self._gangs.consume(uid, node) if self._gangs is not None else None

    def restore(self, key: str, slots: Mapping[str, Slot]) -> None:
        """The members of `slots` did not bind after all: their gang reserves the slots again."""
        if self._gangs is not None:
            self._gangs.restore(key, slots)

    def release(self, key: str, *, back_off: bool = False) -> None:
        """End the gang's admission (and have it back off: its barrier timed out)."""
        if self._gangs is not None:
            self._gangs.release(key, back_off=back_off)

    def admitted_at(self, key: str) -> float | None:
        """When the gang was admitted (the clock's time); None when it is not."""
        return self._gangs.admitted_at(key) if self._gangs is not None else None

    # -- reading the ledger --------------------------------------------------------------------

    def admission(self, key: str) -> Admission | None:
        """The gang's admission: the slots reserved for its unbound members (None: not
        admitted)."""
        return self._gangs.admission(key) if self._gangs is not None else None

    def admitted(self) -> Collection[str]:
        """The keys of the admitted gangs."""
        return self._gangs.admitted() if self._gangs is not None else ()

    def refusal(self, key: str) -> Refusal | None:
        """Why and since when the gang waits, when it was refused (None: it was not)."""
        return self._gangs.refusal(key) if self._gangs is not None else None

    def refused(self) -> Collection[str]:
        """The keys of the refused gangs, as of the last walk."""
        return self._gangs.refused() if self._gangs is not None else ()

    def unasked(self) -> dict[str, float]:
        """The waiting gangs Lahar was never asked about, since when each was first seen."""
        return self._gangs.unasked() if self._gangs is not None else {}

    def blocked(self, gang: GangView) -> Rejection | None:
        """Why the gang waits before any plan: no PodGroup, or backing off (None: neither)."""
        return self._gangs.blocked(gang) if self._gangs is not None else None

    def backing_off(self, key: str) -> Rejection | None:
        """Why the gang waits while it backs off (None: it does not)."""
        return self._gangs.backing_off(key) if self._gangs is not None else None

    def backoff_ends(self, key: str) -> float | None:
        """When the gang's backoff ends (the clock's time; None: it was not backed off)."""
        return self._gangs.backoff_ends(key) if self._gangs is not None else None

    def shown(self, key: str) -> bool:
        """Whether the gang is shown to the scheduler for an autoscaler to see
        (`gangs.scale_up`)."""
        return self._gangs.shown(key) if self._gangs is not None else False

    def in_flight(self) -> int:
        """Members of admitted gangs not yet at the bind barrier."""
        return self._gangs.in_flight() if self._gangs is not None else 0

    def reserved(self) -> Mapping[str, Resources]:
        """Per node, the capacity admitted gangs reserve there."""
        return self._gangs.reserved() if self._gangs is not None else {}

    def reserved_by_gang(self) -> Mapping[str, Resources]:
        """Per admitted gang, the capacity it reserves."""
        return self._gangs.reserved_by_gang() if self._gangs is not None else {}

    def queues(self, state: ClusterState) -> dict[str, QueueView]:
        """Every queue's view: what it is allocated, deserves and may have."""
        return self._gangs.queues(state) if self._gangs is not None else {}

    def moments(self, now: float, *, backoffs: bool = True) -> list[float]:
        """The times after `now` at which the ledger moves with no cluster event."""
        return self._gangs.moments(now, backoffs=backoffs) if self._gangs is not None else []

    # -- what was asked of the autoscaler ------------------------------------------------------

    def provisioning_plan(self, state: ClusterState, now: float) -> Plan:
        """The ProvisioningRequests to create and delete now (`gangs.provisioning`), the book
        of what was asked brought up to date (with the gang rules on)."""
        gangs = self._ledger()
        return provisioning_plan(state, gangs, gangs.scale_ups, state.provisioning_requests, now)

    def scale_up_said(self, key: str, now: float, wall: float | None = None) -> str | None:
        """What the book says of the gang's request for nodes, in words (None: nothing)."""
        return self._gangs.scale_ups.describe(key, now, wall) if self._gangs is not None else None

    def not_asked(self, key: str, why: str) -> None:
        """No request for nodes could be made for the gang: why, for its condition."""
        if self._gangs is not None:
            self._gangs.scale_ups.not_asked(key, why)

    def retry_at(self, key: str) -> float | None:
        """When the next request for the gang's nodes may be made after one ended (None: no
        attempt waits)."""
        return self._gangs.scale_ups.retry_at(key) if self._gangs is not None else None

    def asking(self) -> list[str]:
        """The gangs the book says anything of: a request standing, a retry awaited, or why
        none was made."""
        return self._gangs.scale_ups.known() if self._gangs is not None else []

    def request_phases(self) -> list[str]:
        """The phase of each ProvisioningRequest standing for a gang."""
        if self._gangs is None:
            return []
        book = self._gangs.scale_ups
        return [asked.phase for key in book.asking() if (asked := book.asked(key)) is not None]

    # -- preemption ----------------------------------------------------------------------------

    def asked_to_preempt(self, state: ClusterState, key: str) -> Asked | None:
        """The scheduler asks to preempt for a member of gang `key`: Lahar's victims, or why
        none (`preemption.plan.asked_for`); None when preemption or the gang rules are off."""
        if self.preemption is None or self._gangs is None:
            return None
        return asked_for(state, self._gangs, key, self.preemption.rules)

    def protected_victims(self, state: ClusterState, key: str) -> Protected | None:
        """Why the last victim search for gang `key` found nobody although evictions would
        make room: the protected victims (None: nothing to say)."""
        return protected_victims(state, key)

    def start_preemption(
        self,
        state: ClusterState,
        *,
        carry_out: CarryOut,
        sleep: Sleep,
        failed: Callable[[Exception], None] | None = None,
        polling: bool = True,
        pausing: bool = True,
    ) -> PreemptionSettings | None:
        """Set up Lahar's preemption loop over `state` (`preemption.loop`), woken whenever a
        gang is refused for want of capacity: `carry_out` evicts what it chooses. Its settings;
        None (and no loop) when preemption or the gang rules are off. Run it with
        `preempting`."""
        if self.preemption is None or self._gangs is None:
            return None
        self._loop = PreemptionLoop(
            state,
            self._gangs,
            self.preemption,
            carry_out=carry_out,
            sleep=sleep,
            clock=self.clock,
            failed=failed,
            polling=polling,
            pausing=pausing,
        )
        self._loop.attach()
        return self.preemption

    async def preempting(self) -> None:
        """Run the preemption loop, pass after pass, for as long as the task runs."""
        if self._loop is not None:
            await self._loop.run()

    async def preemption_pass(self) -> bool:
        """One pass of the preemption loop now; whether victims were evicted."""
        return await self._loop.one_pass() if self._loop is not None else False

    def wake_preemption(self) -> None:
        """Have the preemption loop look for a preemption now."""
        if self._loop is not None:
            self._loop.wake()


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
