"""The prioritize verb: a 0..10 score for every candidate node (binpack or spread, per policy).

Returns the encoded reply (a bare JSON array of `{"Host", "Score"}`): for thousands of nodes the
per-node encodings kept by the session's tables are joined instead of built per call.
"""

from __future__ import annotations

from extender.api.candidates import Candidates
from extender.api.wire import ExtenderArgs
from extender.framework.session import Session


def prioritize(session: Session, args: ExtenderArgs, candidates: Candidates) -> bytes:
    return session.score_reply(args.pod, candidates.names)
