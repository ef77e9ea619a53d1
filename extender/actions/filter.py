"""The filter verb: what only Lahar knows about a pod's candidate nodes.

kube-scheduler's in-tree filters (resource fit with NodeResourcesFit, taints, affinity, ports,
volumes) have already kept the nodes the pod fits on; Lahar decides what they cannot (the
engine's one door, `Engine.filter`; this module turns its outcome into the reply):

- the gang rules (`gangs.ledger`): a member of a gang that is not admitted fails everywhere,
  with the gang's reason; asking may admit the gang (the one change a filter call makes);
- reservations: capacity admitted gangs reserve is not offered to other pods (a gang member may take
  its own gang's, `Verdict.credit`);
- queue capability, for members beyond a standing gang's minMember.

Replies are built without decoding the candidate list where the decision needs none of it: when
every candidate passes (a pod outside any gang while no gang reserves capacity: most calls), the
request's own `NodeNames` bytes are echoed; when some fail, their names are cut out of those bytes.
A refused gang member gets its reason once, on one candidate, as UnschedulableAndUnresolvable, and
no node passes: kube-scheduler treats the candidates left out as unresolvable too, so the refusal
costs it no preemption dry run (Lahar's preemptor acts for gangs), and the reply stays a few
hundred bytes however many nodes were offered. The reply mirrors the request's variant: names when
the scheduler sent names (`nodeCacheCapable`), the passing node objects, exactly as sent, when it
sent objects.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic_core import to_json

from extender.api.candidates import Candidates
from extender.api.wire import ExtenderArgs, ExtenderFilterResult, NodeList
from extender.cache.state import ClusterState
from extender.framework.engine import Engine


def filter_nodes(
    engine: Engine, state: ClusterState, args: ExtenderArgs, candidates: Candidates
) -> bytes:
    outcome = engine.filter(state, args.pod, candidates)
    if outcome.gang_reason is not None:
        return refuse_all(args, candidates, outcome.gang_reason, resolvable=False)
    failed = outcome.failed
    if args.nodes is not None:
        return _reply_nodes(args.nodes, set(candidates.names) - failed.keys(), failed)
    if not failed:
        return _names_reply(_raw(candidates), {}, {})
    return _names_reply(candidates.raw_without(failed), failed, {})


def refuse_all(
    args: ExtenderArgs, candidates: Candidates, reason: str, *, resolvable: bool = True
) -> bytes:
    """No candidate passes, for `reason`: said once, on the first candidate (the scheduler
    counts the others, left out of the reply, as unresolvable). `resolvable` marks it as a
    refusal that evicting pods could help (FailedNodes) rather than not (FailedAndUnresolvable)."""
    if args.nodes is not None:
        failed = dict.fromkeys(candidates.names, reason)
        if resolvable:
            return _reply_nodes(args.nodes, set(), failed)
        return _reply_nodes(args.nodes, set(), {}, failed)
    first = candidates.first()
    said = {first: reason} if first is not None else {}
    if resolvable:
        return _names_reply(b"[]", said, {})
    return _names_reply(b"[]", {}, said)


def _raw(candidates: Candidates) -> bytes:
    return candidates.raw if candidates.raw is not None else to_json(candidates.names)


def _names_reply(names: bytes, failed: Mapping[str, str], unresolvable: Mapping[str, str]) -> bytes:
    """An ExtenderFilterResult with `names` (a JSON array, as bytes) passing."""
    return (
        b'{"Nodes":null,"NodeNames":'
        + names
        + b',"FailedNodes":'
        + to_json(failed)
        + b',"FailedAndUnresolvableNodes":'
        + to_json(unresolvable)
        + b',"Error":""}'
    )


def _reply_nodes(
    nodes: NodeList,
    passed: set[str],
    failed: Mapping[str, str],
    unresolvable: Mapping[str, str] | None = None,
) -> bytes:
    """The Nodes variant: the passing node objects, exactly as they came."""
    result = ExtenderFilterResult.model_construct(
        nodes=NodeList(items=[item for item in nodes.items if item["metadata"]["name"] in passed]),
        node_names=None,
        failed_nodes=dict(failed),
        failed_and_unresolvable_nodes=dict(unresolvable or {}),
        error="",
    )
    return result.dump()
