"""Lahar-initiated preemption and reclaim: evict whole gangs so a more deserving gang fits.

With this plugin, a gang refused for lack of capacity may have the fewest whole gangs (or members
beyond a gang's minMember) evicted for it through the Eviction API, by the actions
`preempt.actions` names (Volcano's two, both by default):

- `preempt`: gangs of lower priority in its own queue, when the `priority` plugin is on; gang's
  and drf's rules on victims narrow these unless their entries say `enablePreemptable: false`
  (gang: only members beyond minMember, never a whole gang; drf: only while the victim's gang
  keeps a dominant share at least the preemptor's);
- `reclaim`: gangs of reclaimable queues above their deserved share, for a queue below its own,
  when `proportion` is on.

Never a victim: a pod or PodGroup whose `volcano.sh/preemptable` is false, a pod in kube-system
or of priorityClassName system-cluster-critical or system-node-critical (Volcano's conformance),
a pod outside a PodGroup. At most one preemption every `preempt.intervalSeconds`; Events on both
PodGroups name the preemptor and the victims.

    - name: preempt
      arguments:
        preempt.actions: preempt, reclaim    # or a YAML list; at least one
        preempt.intervalSeconds: 5
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.framework.plugin import Argument, Switches
from extender.plugins.arguments import reject_unknown, seconds, words

NAME = "preempt"
INTERVAL = "preempt.intervalSeconds"
ACTIONS = "preempt.actions"
PREEMPT, RECLAIM = "preempt", "reclaim"
DEFAULT_INTERVAL = 5.0


class Preempt:
    name = NAME

    def __init__(self, interval: float, actions: frozenset[str] = frozenset((PREEMPT, RECLAIM))):
        self.switches = Switches(
            preempt_interval=interval,
            preempts_within_queue=PREEMPT in actions,
            reclaims_between_queues=RECLAIM in actions,
        )


def configure(arguments: Mapping[str, Argument]) -> Preempt:
    reject_unknown(arguments, (INTERVAL, ACTIONS), NAME)
    actions = words(arguments, ACTIONS, f"{PREEMPT}, {RECLAIM}")
    if not actions:
        raise ValueError(f"{ACTIONS}: names no action (one or both of {PREEMPT}, {RECLAIM})")
    for action in actions:
        if action not in (PREEMPT, RECLAIM):
            raise ValueError(
                f"{ACTIONS}: {action!r} is not an action of Lahar's preemption "
                f"(one or both of {PREEMPT}, {RECLAIM})"
            )
    return Preempt(seconds(arguments, INTERVAL, DEFAULT_INTERVAL), frozenset(actions))
