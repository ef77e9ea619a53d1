"""The candidate parser gives what a full parse gives, for Go-shaped bodies and any other."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from extender.api.candidates import CandidateParser
from extender.api.wire import ExtenderArgs, explain
from tests.builders import make_node, make_pod


def go_body(args: dict[str, Any]) -> bytes:
    """As Go's encoding/json writes ExtenderArgs: compact, fields in struct order."""
    return json.dumps(args, separators=(",", ":")).encode()


def test_go_shaped_body_is_split_and_parsed() -> None:
    pod = make_pod("p").cpu("1").build()
    args, candidates = CandidateParser().parse(go_body({"Pod": pod, "NodeNames": ["a", "b"]}))
    assert args.pod.metadata.name == "p"
    assert args.candidate_names() == ["a", "b"]
    assert candidates.names == ["a", "b"]
    assert candidates.members == frozenset({"a", "b"})
    assert candidates.raw == b'["a","b"]'


def test_an_identical_candidate_list_is_parsed_once() -> None:
    parser = CandidateParser()
    first = parser.parse(go_body({"Pod": make_pod("p").build(), "NodeNames": ["a", "b"]}))[1]
    second = parser.parse(go_body({"Pod": make_pod("q").build(), "NodeNames": ["a", "b"]}))[1]
    other = parser.parse(go_body({"Pod": make_pod("r").build(), "NodeNames": ["b", "a"]}))[1]
    assert second is first
    assert other is not first
    assert other.names == ["b", "a"]


@pytest.mark.parametrize(
    "body",
    [
        {"NodeNames": ["a"], "Pod": make_pod("p").build()},  # NodeNames first
        {"Pod": make_pod("p").build(), "NodeNames": ["a"], "Nodes": None},  # not last
        {"Pod": make_pod("p").build(), "Nodes": {"items": [make_node("a").build()]}},
        {"Pod": make_pod("p").build(), "Nodes": None, "NodeNames": ["a"]},
    ],
    ids=["names-first", "names-not-last", "nodes-variant", "nodes-null"],
)
def test_other_shapes_fall_back_to_the_full_parse(body: dict[str, Any]) -> None:
    args, candidates = CandidateParser().parse(go_body(body))
    assert candidates.names == ["a"]
    assert args == ExtenderArgs.model_validate_json(go_body(body)).model_copy(
        update={"node_names": args.node_names}
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"Pod":{},"NodeNames":[1]}', "NodeNames.0: Input should be a valid string"),
        (b'{"Pod":[],"NodeNames":["a"]}', "Pod: Input should be an object"),
        (b'{"NodeNames":["a"]}', "Pod: Field required"),
        (b'{"Pod":{},"NodeNames":["a"]', "body: Invalid JSON: EOF while parsing an object"),
    ],
)
def test_malformed_bodies_are_named_as_by_the_full_parse(body: bytes, expected: str) -> None:
    with pytest.raises(ValidationError) as error:
        CandidateParser().parse(body)
    assert explain(error.value).startswith(expected)


_text = st.text(st.characters(codec="utf-8"), max_size=20)


@given(
    labels=st.dictionaries(_text, _text, max_size=4),
    names=st.lists(_text, max_size=6),
    use_go_order=st.booleans(),
)
def test_any_pod_and_names_parse_like_the_full_parse(
    labels: dict[str, str], names: list[str], use_go_order: bool
) -> None:
    pod = make_pod("p").build()
    pod["metadata"]["labels"] = labels
    body = {"Pod": pod, "NodeNames": names} if use_go_order else {"NodeNames": names, "Pod": pod}
    raw = go_body(body)
    args, candidates = CandidateParser().parse(raw)
    expected = ExtenderArgs.model_validate_json(raw)
    assert candidates.names == names
    assert args.candidate_names() == names
    assert args.pod == expected.pod
