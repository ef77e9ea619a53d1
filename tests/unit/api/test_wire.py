"""The extender wire types read what kube-scheduler sends (both node variants, both victim forms)
and write what it reads (capitalised keys)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from extender.api.wire import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    HostPriority,
    describe_invalid,
)
from tests.builders import make_node, make_pod


def test_node_names_variant() -> None:
    body = {"Pod": make_pod("p").cpu("1").build(), "Nodes": None, "NodeNames": ["a", "b"]}
    args = ExtenderArgs.model_validate_json(json.dumps(body))
    assert args.candidate_names() == ["a", "b"]
    assert args.pod.metadata.name == "p"


def test_nodes_variant_keeps_the_node_objects() -> None:
    nodes = [make_node("a").build(), make_node("b").build()]
    body = {"Pod": make_pod("p").build(), "Nodes": {"metadata": {}, "items": nodes}}
    args = ExtenderArgs.model_validate_json(json.dumps(body))
    assert args.candidate_names() == ["a", "b"]
    assert args.nodes is not None
    assert args.nodes.items == nodes


def test_a_nodes_item_without_a_name_is_named_in_the_error() -> None:
    body = {"Pod": make_pod("p").build(), "Nodes": {"items": [{"metadata": {}}]}}
    with pytest.raises(ValidationError) as error:
        ExtenderArgs.model_validate_json(json.dumps(body))
    assert (
        describe_invalid(error.value)
        == "Nodes.items: item 0: metadata.name is missing or not a string"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, "Pod: Field required"),
        ({"Pod": [], "NodeNames": []}, "Pod: Input should be an object"),
        ({"Pod": {}, "NodeNames": "a"}, "NodeNames: Input should be a valid array"),
    ],
)
def test_malformed_args(body: object, expected: str) -> None:
    with pytest.raises(ValidationError) as error:
        ExtenderArgs.model_validate_json(json.dumps(body))
    assert describe_invalid(error.value) == expected


def test_filter_result_uses_go_field_names() -> None:
    result = ExtenderFilterResult(node_names=["a"], failed_nodes={"b": "full"})
    assert json.loads(result.dump()) == {
        "Nodes": None,
        "NodeNames": ["a"],
        "FailedNodes": {"b": "full"},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
    assert json.loads(HostPriority(host="a", score=7).dump()) == {"Host": "a", "Score": 7}


def test_preemption_args_in_both_forms_become_meta_victims() -> None:
    victim = make_pod("v").uid("u-1").build()
    full = ExtenderPreemptionArgs.model_validate(
        {"Pod": make_pod("p").build(), "NodeNameToVictims": {"n1": {"Pods": [victim]}}}
    )
    meta = ExtenderPreemptionArgs.model_validate(
        {
            "Pod": make_pod("p").build(),
            "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u-1"}], "NumPDBViolations": 1}},
        }
    )
    assert [p.uid for p in full.meta_victims()["n1"].pods] == ["u-1"]
    assert meta.meta_victims()["n1"].num_pdb_violations == 1


def test_binding_args_require_names() -> None:
    args = ExtenderBindingArgs.model_validate(
        {"PodName": "p", "PodNamespace": "ns", "PodUID": "u", "Node": "n1"}
    )
    assert (args.pod_name, args.pod_namespace, args.pod_uid, args.node) == ("p", "ns", "u", "n1")
    with pytest.raises(ValidationError) as error:
        ExtenderBindingArgs.model_validate({"PodName": "p", "PodNamespace": "ns", "Node": ""})
    assert "Node: String should have at least 1 character" in describe_invalid(error.value)
