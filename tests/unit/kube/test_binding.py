"""Creating a binding: idempotent, and a call that got no answer is sent again. A binding that
landed before its answer was lost is found bound to that very node (409, then the pod read back);
bound elsewhere, or refused, it is an error at once; three unanswered calls are an error. An
eviction of a pod already gone, or replaced by one made again under its name, is no refusal."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from extender.kube import binding
from extender.kube.binding import bind_pod
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError

CUT = KubeError("POST binding: Server disconnected")


def conflict() -> ApiStatusError:
    return ApiStatusError("pod a is already assigned to a node", 409)


class Api:
    """Answers POSTs in order (an exception is raised, None answers), GETs with the pod."""

    def __init__(self, posts: list[Exception | None], bound_to: str = "n1") -> None:
        self.posts, self.bound_to = posts, bound_to
        self.calls: list[str] = []

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> bytes:
        self.calls.append(method)
        if method == "GET":
            pod = {"metadata": {"uid": "u1"}, "spec": {"nodeName": self.bound_to}}
            return json.dumps(pod).encode()
        answer = self.posts.pop(0)
        if answer is not None:
            raise answer
        return b"{}"


@pytest.mark.parametrize(
    ("posts", "bound_to", "bound", "calls"),
    [
        ([None], "n1", True, ["POST"]),
        ([CUT, None], "n1", True, ["POST", "POST"]),
        ([CUT, conflict()], "n1", True, ["POST", "POST", "GET"]),  # the first one landed
        ([CUT, conflict()], "n2", False, ["POST", "POST", "GET"]),  # someone else bound it
        ([CUT, CUT, CUT], "n1", False, ["POST", "POST", "POST"]),
        ([ApiStatusError("forbidden", 403)], "n1", False, ["POST"]),  # refused: no retry
    ],
    ids=["made", "cut, made", "cut, landed", "cut, bound elsewhere", "never answered", "refused"],
)
def test_a_binding_is_sent_again_only_when_it_got_no_answer(
    monkeypatch: pytest.MonkeyPatch,
    posts: list[Exception | None],
    bound_to: str,
    bound: bool,
    calls: list[str],
) -> None:
    monkeypatch.setattr(binding, "BIND_BACKOFF", 0.0)
    api = Api(list(posts), bound_to)
    bind = bind_pod(api, "ns", "a", "u1", "n1")  # type: ignore[arg-type]
    if bound:
        asyncio.run(bind)
    else:
        with pytest.raises(KubeError, match="binding pod ns/a to n1"):
            asyncio.run(bind)
    assert api.calls == calls


class Answer:
    """A response whose body is `body` (what `send` returns)."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def read(self) -> bytes:
        return json.dumps(self.body).encode()


@pytest.mark.parametrize(
    ("post", "found", "outcome"),
    [
        (None, None, True),
        (ApiStatusError("not found", 404), None, False),  # already gone
        (conflict(), ApiStatusError("not found", 404), False),  # gone since
        (conflict(), "u2", False),  # made again under its name: that very pod is gone
        (conflict(), "u1", "evicting pod ns/a"),  # still there: a conflict of another kind
        (ApiStatusError("disruption budget", 429), None, "evicting pod ns/a"),
    ],
    ids=["evicted", "gone", "gone since", "replaced", "conflict", "refused"],
)
def test_an_eviction_of_a_pod_gone_or_made_again_under_its_name_is_no_refusal(
    monkeypatch: pytest.MonkeyPatch,
    post: ApiStatusError | None,
    found: ApiStatusError | str | None,
    outcome: bool | str,
) -> None:
    def send(api: Any, method: str, path: str, **_: Any) -> Answer:
        if method == "POST":
            if post is not None:
                raise post
            return Answer({})
        assert method == "GET" and path == "/api/v1/namespaces/ns/pods/a"
        if isinstance(found, ApiStatusError):
            raise found
        return Answer({"metadata": {"name": "a", "uid": found}})

    monkeypatch.setattr(binding, "send", send)
    if isinstance(outcome, str):
        with pytest.raises(KubeError, match=outcome):
            binding.evict_pod(None, "ns", "a", "u1")  # type: ignore[arg-type]
    else:
        assert binding.evict_pod(None, "ns", "a", "u1") is outcome  # type: ignore[arg-type]
