"""The filter verb: which candidate nodes can take the pod, and why each other one cannot.

The reply mirrors the request's variant: node names when the scheduler sent names
(`nodeCacheCapable`), the passing node objects, exactly as sent, when it sent objects. When every
candidate passes, the reply echoes the request's own NodeNames bytes instead of encoding them again.
Gang admission happens here (`framework.gang`), before the pure session decides.
"""

from __future__ import annotations

from extender.api.candidates import Candidates
from extender.api.wire import ExtenderArgs, ExtenderFilterResult, NodeList, all_passed_json
from extender.cache.state import ClusterState
from extender.framework.gang_types import PLAIN
from extender.framework.session import Session


def filter_nodes(
    session: Session, args: ExtenderArgs, candidates: Candidates, state: ClusterState
) -> bytes:
    verdict = PLAIN
    gangs = session.engine.gangs
    if gangs is not None:  # may admit the pod's gang: the one change a filter call makes
        gangs.serve(args.pod.spec.scheduler_name)
        verdict = gangs.verdict(state, session.snapshot.nodes, args.pod)
    outcome = session.filter(args.pod, candidates, verdict)
    if outcome.everything_passed and candidates.raw is not None and args.nodes is None:
        return all_passed_json(candidates.raw)
    return _reply(args, outcome.passed, outcome.failed, outcome.unresolvable)


def refuse_all(args: ExtenderArgs, candidates: Candidates, reason: str) -> bytes:
    """Every candidate fails for `reason` (retried later: not marked unresolvable)."""
    return _reply(args, [], dict.fromkeys(candidates.names, reason), {})


def _reply(
    args: ExtenderArgs,
    passed: list[str],
    failed: dict[str, str],
    unresolvable: dict[str, str],
) -> bytes:
    result = ExtenderFilterResult.model_construct(
        nodes=None,
        node_names=None,
        failed_nodes=failed,
        failed_and_unresolvable_nodes=unresolvable,
        error="",
    )
    if args.node_names is not None or args.nodes is None:
        result.node_names = passed
    else:
        kept = set(passed)
        result.nodes = NodeList(
            items=[item for item in args.nodes.items if item["metadata"]["name"] in kept]
        )
    return result.dump()
