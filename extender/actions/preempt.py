"""The preempt verb. Until Lahar's queue and gang-aware preemption arrives (issue 6), it accepts the
scheduler's candidates as they are, in the meta form the protocol answers with: every node keeps
the victims the scheduler chose (a node offered with no victim is dropped, as the protocol asks).
Both request forms (full pods or UIDs) are read.
"""

from __future__ import annotations

from extender.api.wire import ExtenderPreemptionArgs, ExtenderPreemptionResult


def preempt(args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
    candidates = {node: victims for node, victims in args.meta_victims().items() if victims.pods}
    return ExtenderPreemptionResult(node_name_to_meta_victims=candidates)
