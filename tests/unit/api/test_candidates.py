"""The candidate parser gives what a full parse gives, for Go-shaped bodies and any other."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from extender.api.candidates import CandidateParser, plain_names
from extender.api.wire import ExtenderArgs, describe_invalid
from tests.builders import make_node, make_pod


def go_body(args: dict[str, Any]) -> bytes:
    """As Go's encoding/json writes ExtenderArgs: compact, fields in struct order."""
    return json.dumps(args, separators=(",", ":")).encode()


def test_go_shaped_body_is_split_and_its_names_are_read_only_when_asked() -> None:
    pod = make_pod("p").cpu("1").build()
    args, candidates = CandidateParser().parse(go_body({"Pod": pod, "NodeNames": ["a", "b"]}))
    assert args.pod.metadata.name == "p"
    assert candidates.raw == b'["a","b"]'
    assert "a" in candidates
    assert "c" not in candidates
    assert candidates.first() == "a"
    assert candidates.raw_without({"a"}) == b'["b"]'
    assert candidates._names is None  # nothing above decoded the list
    assert candidates.names == ["a", "b"]
    assert candidates.members == frozenset({"a", "b"})


def test_a_pod_retried_unchanged_is_parsed_once() -> None:
    parser = CandidateParser()
    pod = make_pod("p").build()
    first = parser.parse(go_body({"Pod": pod, "NodeNames": ["a", "b"]}))[0]
    second = parser.parse(go_body({"Pod": pod, "NodeNames": ["b", "c"]}))[0]
    other = parser.parse(go_body({"Pod": make_pod("q").build(), "NodeNames": ["a"]}))[0]
    assert second.pod is first.pod
    assert other.pod is not first.pod


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        (b"[]", True),
        (b'["a"]', True),
        (b'["a","b.c-1"]', True),
        (b'["a","b",]', False),
        (b'["a",,"b"]', False),
        (b'["a""b"]', False),
        (b'["a"x,"b"]', False),
        (b'["a", "b"]', False),  # (Go writes no spaces: the full parse reads the rest)
        (b'[1,"a"]', False),
        (b'["a\\"b"]', False),
        (b'["a\nb"]', False),
        (b'["a\x01"]', False),
        (b'["a",["b"]]', False),
    ],
)
def test_only_plain_name_arrays_skip_decoding(raw: bytes, plain: bool) -> None:
    assert plain_names(raw) is plain


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
def test_other_shapes_read_as_the_full_parse(body: dict[str, Any]) -> None:
    args, candidates = CandidateParser().parse(go_body(body))
    expected = ExtenderArgs.model_validate_json(go_body(body))
    assert candidates.names == ["a"]
    assert (args.pod, args.nodes) == (expected.pod, expected.nodes)


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
    assert describe_invalid(error.value).startswith(expected)


_text = st.text(st.characters(codec="utf-8"), max_size=20)


@given(
    labels=st.dictionaries(_text, _text, max_size=4),
    names=st.lists(_text, max_size=6, unique=True),
    use_go_order=st.booleans(),
    dropped=st.sets(st.integers(0, 5), max_size=3),
)
def test_any_pod_and_names_parse_like_the_full_parse(
    labels: dict[str, str], names: list[str], use_go_order: bool, dropped: set[int]
) -> None:
    pod = make_pod("p").build()
    pod["metadata"]["labels"] = labels
    body = {"Pod": pod, "NodeNames": names} if use_go_order else {"NodeNames": names, "Pod": pod}
    raw = go_body(body)
    args, candidates = CandidateParser().parse(raw)
    expected = ExtenderArgs.model_validate_json(raw)
    assert args.pod == expected.pod
    assert all(name in candidates for name in names)
    assert candidates.first() == (names[0] if names else None)
    gone = {names[i] for i in dropped if i < len(names)}
    assert json.loads(candidates.raw_without(gone)) == [n for n in names if n not in gone]
    assert candidates.names == names


def test_a_pod_the_cache_holds_at_that_version_is_not_parsed_again() -> None:
    built = make_pod("p").uid("u1").build()
    built["metadata"]["resourceVersion"] = "7"
    cached = ExtenderArgs.model_validate({"Pod": built}).pod
    parser = CandidateParser(known=lambda uid, rv: cached if (uid, rv) == ("u1", "7") else None)
    args, _ = parser.parse(go_body({"Pod": built, "NodeNames": ["a"]}))
    assert args.pod is cached
    built["metadata"]["resourceVersion"] = "8"  # a newer version than the cache's: parsed
    newer, _ = parser.parse(go_body({"Pod": built, "NodeNames": ["a"]}))
    assert newer.pod is not cached
    assert newer.pod.metadata.resource_version == "8"
