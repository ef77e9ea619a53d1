"""The candidate node names of a filter or prioritize call, read only as far as a decision needs.

kube-scheduler sends a list of node names with every call (hundreds with its node sampling, every
feasible node without), and most filter calls need none of them: a pod outside any gang, when no
gang reserves capacity, passes every candidate, and the reply echoes the array as it came. So
`CandidateParser` splits the raw `NodeNames` array off the body (Go writes it as the last field of
ExtenderArgs, and an unescaped `,"NodeNames":[` cannot occur inside the Pod's JSON strings) and
checks its shape without decoding it: a JSON array of strings without escapes, every comma between
two of them (node names are DNS subdomains: no quote, backslash or control character). A name is
looked up in the raw bytes; the list and its set are decoded only for a reader that asks for them.
The pod's part of the body is not parsed when the caller already holds that very version of the
pod (`known`: the cache, which the watch filled from the same JSON), found by the uid and the
resourceVersion at the head of its metadata (Go writes them next to each other, before any label
or annotation); else it is parsed, once per distinct bytes (a pod retried unchanged sends the
same). Anything unexpected falls back to parsing the whole body, so a malformed one is refused
with the field that is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection

from cachetools import LRUCache
from pydantic import ValidationError

from extender.api.objects import Pod
from extender.api.wire import ExtenderArgs

_MARK = b',"NodeNames":['
_IDENTITY = re.compile(rb'"uid":"([^"\\]+)","resourceVersion":"([^"\\]+)"')
_HEAD = 1024  # bytes of the pod's JSON the uid and resourceVersion are looked for in
Known = Callable[[str, str], Pod | None]  # (uid, resourceVersion) -> that pod, if cached
_CONTROL = re.compile(rb"[\x00-\x1f\\]")  # control characters and escapes: not a plain name


class Candidates:
    """One call's candidate list: the JSON array as received (`raw`, when it came as names), and
    in order and as a set, decoded when first read."""

    __slots__ = ("_members", "_names", "all_known_at", "raw")

    def __init__(
        self,
        names: list[str] | None = None,
        members: frozenset[str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        if names is None and raw is None:
            raise ValueError("Candidates need names or their raw JSON array")
        self._names = names
        self._members = members
        self.raw = raw
        # The node-membership version of the state at which every name was known to be a node.
        self.all_known_at = -1

    @property
    def names(self) -> list[str]:
        if self._names is None:
            assert self.raw is not None
            self._names = json.loads(self.raw)  # (its shape was checked: strings only)
        return self._names

    @property
    def members(self) -> frozenset[str]:
        if self._members is None:
            self._members = frozenset(self.names)
        return self._members

    def __contains__(self, name: object) -> bool:
        if self._members is not None or self.raw is None:
            return name in self.members
        return isinstance(name, str) and self.raw.find(b'"%s"' % name.encode()) >= 0

    def first(self) -> str | None:
        """The first candidate (None when there is none), without decoding the rest."""
        if self._names is not None or self.raw is None:
            return self.names[0] if self.names else None
        end = self.raw.find(b'"', 2)
        return self.raw[2:end].decode() if end > 0 else None

    def raw_without(self, names: Collection[str]) -> bytes:
        """The JSON array of the candidates less `names` (each one of them), in order."""
        if self.raw is None:
            return json.dumps([n for n in self.names if n not in names]).encode()
        raw = self.raw
        for name in names:
            quoted = b'"%s"' % name.encode()
            for cut in (quoted + b",", b"," + quoted, quoted):
                if cut in raw:
                    raw = raw.replace(cut, b"", 1)
                    break
        return raw


def plain_names(raw: bytes) -> bool:
    """Whether `raw` is a JSON array of strings with no escape or control character and nothing
    between them but commas (`["a","b"]`, or `[]`): what kube-scheduler sends for node names."""
    if raw == b"[]":
        return True
    if not (raw.startswith(b'["') and raw.endswith(b'"]')) or _CONTROL.search(raw):
        return False
    commas = raw.count(b",")
    return raw.count(b'","') == commas and raw.count(b'"') == 2 * (commas + 1)


class CandidateParser:
    def __init__(self, size: int = 64, known: Known | None = None) -> None:
        # The pod's part of the body, parsed: a pod retried unchanged sends the same bytes.
        self._pods: LRUCache[bytes, Pod] = LRUCache(maxsize=size)
        self._known = known

    def parse(self, body: bytes) -> tuple[ExtenderArgs, Candidates]:
        """The call's arguments and its candidates; a malformed body raises ValidationError."""
        fast = self._parse_split(body)
        if fast is not None:
            return fast
        args = ExtenderArgs.model_validate_json(body)
        names = args.candidate_names()
        return args, Candidates(names, frozenset(names))

    def _parse_split(self, body: bytes) -> tuple[ExtenderArgs, Candidates] | None:
        """The fast path for Go's shape (NodeNames last, plain names); None when the body is
        not that shape, so the full parse decides and its error names the field."""
        split = _split(body)
        if split is None:
            return None
        head, raw = split
        if not plain_names(raw):
            return None
        pod = self._pods.get(head)
        if pod is None and self._known is not None:
            identity = _IDENTITY.search(head, 0, _HEAD)
            if identity is not None:
                pod = self._known(identity[1].decode(), identity[2].decode())
        if pod is None:
            try:
                args = ExtenderArgs.model_validate_json(head)
            except ValidationError:
                return None
            if args.nodes is not None:
                return None
            pod = self._pods[head] = args.pod
        candidates = Candidates(raw=raw)
        return ExtenderArgs.model_construct(pod=pod, nodes=None, node_names=None), candidates


def _split(body: bytes) -> tuple[bytes, bytes] | None:
    """(the body without NodeNames, the raw NodeNames array), or None if it is not that shape."""
    at = body.rfind(_MARK)
    if at < 0:
        return None
    tail = body[at + len(_MARK) - 1 :].rstrip()
    if not tail.endswith(b"]}"):
        return None
    return body[:at] + b"}", tail[:-1]
