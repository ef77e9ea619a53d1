"""The filter verb: which candidate nodes can take the pod, and why each other one cannot.

The reply mirrors the request's variant: node names when the scheduler sent names
(`nodeCacheCapable`), the passing node objects, exactly as sent, when it sent objects.
"""

from __future__ import annotations

from extender.api.wire import ExtenderArgs, ExtenderFilterResult, NodeList
from extender.framework.session import Session


def filter_nodes(session: Session, args: ExtenderArgs) -> ExtenderFilterResult:
    outcome = session.filter(args.pod, args.candidate_names())
    result = ExtenderFilterResult(
        failed_nodes=outcome.failed, failed_and_unresolvable_nodes=outcome.unresolvable
    )
    if args.node_names is not None or args.nodes is None:
        result.node_names = outcome.passed
    else:
        passed = set(outcome.passed)
        result.nodes = NodeList(
            items=[item for item in args.nodes.items if item["metadata"]["name"] in passed]
        )
    return result
