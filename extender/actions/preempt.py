"""The preempt verb: of the victims kube-scheduler proposes, keep only what Lahar's rules allow.

kube-scheduler proposes candidates (node -> victims) from a dry run of its in-tree filters, which
know nothing of gangs or queues. The answer keeps, of those (a node offered with no victim is
dropped, as the protocol asks):

- for a gang's pod: the engine's own choice for the gang (`Engine.asked_to_preempt`: whole
  gangs of lower priority in its queue, or of reclaimable queues above their deserved share,
  never part of a gang's core; the fewest pods, then cpu and memory, that let the whole gang
  fit). When those victims are all on one node the scheduler offered, are among the victims it
  proposed there, it counted no PodDisruptionBudget violation there, and the gang is the most
  deserving one short of capacity, the answer is that node with exactly those victims.
  Otherwise the answer is empty and Lahar's preemptor carries out its choice itself, through the
  Eviction API (PDBs honoured, the whole victim gang evicted, Events naming preemptor and
  victims), for the most deserving gang.
  A gang waiting for another reason than capacity, or for which no valid victims exist, gets
  nothing: preempting would not let it in, or would break the rules.
- for a pod outside any PodGroup: the scheduler's candidates whose victims are all outside
  PodGroups too (evicting a gang member would break its gang for a pod no queue accounts for)
  and none protected (`volcano.sh/preemptable` false, or Volcano's conformance: `api.preemptable`),
  the cheapest of them (fewest pods, then cpu, then memory).

Without the preempt plugin in the policy (as shipped, like Volcano's shipped configuration) the
answer is always empty: nothing is evicted, for a gang's pod or any other.

A victim the cache does not know is a case Lahar cannot decide: its node is dropped, never
guessed. Both request forms (full pods or UIDs) are read; the answer is in the meta form.
Outcomes are values: the decision says what to answer, why, and whether the preemptor must act.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.api.objects import Pod
from extender.api.preemptable import pod_protection
from extender.api.scheduling import gang_key
from extender.api.wire import (
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    MetaPod,
    MetaVictims,
)
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, Preemption, cost

NOTHING = ExtenderPreemptionResult(node_name_to_meta_victims={})


@dataclass(frozen=True)
class PreemptDecision:
    result: ExtenderPreemptionResult
    reason: str  # what was decided and why, for the log
    hand_off: bool = False  # Lahar's preemptor should act now
    proposed: Preemption | None = None  # Lahar's victims, answered for the scheduler to evict


def preempt(args: ExtenderPreemptionArgs, state: ClusterState, engine: Engine) -> PreemptDecision:
    candidates = {node: victims for node, victims in args.meta_victims().items() if victims.pods}
    key = gang_key(args.pod)
    if engine.preemption is None or (key is not None and not engine.gang_rules):
        what = f"gang {key}" if key is not None else f"pod {args.pod.key}"
        return PreemptDecision(NOTHING, f"{what}: preemption is off in Lahar's policy")
    if key is None:
        return _for_plain_pod(args.pod, candidates, state)
    asked = engine.asked_to_preempt(state, key)
    assert asked is not None  # (preemption and the gang rules are on)
    handed = PreemptDecision(NOTHING, asked.reason, hand_off=asked.hand_off)
    if asked.chosen is None:
        return handed
    return _as_proposed(asked.chosen, candidates) or handed


def _as_proposed(chosen: Preemption, candidates: dict[str, MetaVictims]) -> PreemptDecision | None:
    """Lahar's victims as the scheduler's answer, when they are all on one node it offered,
    among the victims it proposed there, with no PDB violation counted there."""
    on: dict[str, list[str]] = {}
    for unit in chosen.victims:
        for pod, node in unit.pods:
            on.setdefault(node, []).append(pod.metadata.uid)
    if len(on) != 1:
        return None
    [(node, uids)] = on.items()
    offered = candidates.get(node)
    if (
        offered is None
        or offered.num_pdb_violations
        or not set(uids) <= {pod.uid for pod in offered.pods}
    ):
        return None
    victims = MetaVictims(pods=[MetaPod(uid=uid) for uid in uids])
    result = ExtenderPreemptionResult(node_name_to_meta_victims={node: victims})
    return PreemptDecision(
        result, f"{chosen.message}: on node {node}, as proposed", proposed=chosen
    )


def _for_plain_pod(
    pod: Pod, candidates: dict[str, MetaVictims], state: ClusterState
) -> PreemptDecision:
    valid: dict[str, tuple[int, int, int]] = {}
    for node, victims in candidates.items():
        known = [state.pods.get(victim.uid) for victim in victims.pods]
        plain = [
            p for p in known if p is not None and gang_key(p) is None and not pod_protection(p)
        ]
        if len(plain) == len(known):  # else unknown, a gang member or protected: not to evict
            valid[node] = cost(plain)
    if not valid:
        return PreemptDecision(
            NOTHING,
            f"pod {pod.key}: every proposed victim set breaks a gang, is protected "
            "(volcano.sh/preemptable, conformance) or is unknown",
        )
    cheapest = min(valid.values())
    kept = {node: candidates[node] for node, cost in valid.items() if cost == cheapest}
    result = ExtenderPreemptionResult(node_name_to_meta_victims=kept)
    return PreemptDecision(result, f"pod {pod.key}: kept {sorted(kept)} of {len(candidates)}")
