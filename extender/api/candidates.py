"""The candidate node names of a filter or prioritize call, parsed once per distinct list.

kube-scheduler sends the same candidate list (often every node) call after call, and at 5,000
nodes turning that JSON array into Python strings, hashing them into a set and encoding them back
costs more than the decision itself. `CandidateParser` splits the raw `NodeNames` array off the body
(Go writes it as the last field of ExtenderArgs, and an unescaped `,"NodeNames":[` cannot occur
inside the Pod's JSON strings), and reuses the parsed list and set of an identical array (bytes
compared exactly) from a recent call, and the parsed pod of an identical rest of the body (filter
then prioritize send the same pod). Anything unexpected falls back to parsing the whole body.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachetools import LRUCache
from pydantic import TypeAdapter, ValidationError

from extender.api.objects import Pod
from extender.api.wire import ExtenderArgs

_MARK = b',"NodeNames":['
_NAMES = TypeAdapter(list[str])


@dataclass(eq=False)
class Candidates:
    """One distinct candidate list: in order, as a set, and as the JSON array received."""

    names: list[str]
    members: frozenset[str]
    raw: bytes | None = None
    # The node-membership version of the state at which every name was known to be a node.
    all_known_at: int = field(default=-1)


class CandidateParser:
    def __init__(self, size: int = 8) -> None:
        self._recent: LRUCache[bytes, Candidates] = LRUCache(maxsize=size)
        # The pod's part of the body, parsed: filter and prioritize send the same pod.
        self._pods: LRUCache[bytes, Pod] = LRUCache(maxsize=size)

    def parse(self, body: bytes) -> tuple[ExtenderArgs, Candidates]:
        """The call's arguments and its candidates; a malformed body raises ValidationError."""
        fast = self._parse_split(body)
        if fast is not None:
            return fast
        args = ExtenderArgs.model_validate_json(body)
        names = args.candidate_names()
        return args, Candidates(names, frozenset(names))

    def _parse_split(self, body: bytes) -> tuple[ExtenderArgs, Candidates] | None:
        """The fast path for Go's shape (NodeNames last); None when the body is not that shape,
        so the full parse decides and its error names the field."""
        split = _split(body)
        if split is None:
            return None
        head, raw = split
        try:
            candidates = self._recent.get(raw)
            if candidates is None:
                names = _NAMES.validate_json(raw)
                candidates = Candidates(names, frozenset(names), raw)
                self._recent[raw] = candidates
            pod = self._pods.get(head)
            if pod is None:
                args = ExtenderArgs.model_validate_json(head)
                if args.nodes is not None:
                    return None
                pod = self._pods[head] = args.pod
        except ValidationError:
            return None
        args = ExtenderArgs.model_construct(pod=pod, nodes=None, node_names=candidates.names)
        return args, candidates


def _split(body: bytes) -> tuple[bytes, bytes] | None:
    """(the body without NodeNames, the raw NodeNames array), or None if it is not that shape."""
    at = body.rfind(_MARK)
    if at < 0:
        return None
    tail = body[at + len(_MARK) - 1 :].rstrip()
    if not tail.endswith(b"]}"):
        return None
    return body[:at] + b"}", tail[:-1]
