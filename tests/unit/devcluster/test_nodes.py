"""Fake nodes carry the resources asked for; a node takes pods only when Ready and untainted;
asked for, they sit in switches and spines in contiguous, even blocks."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.devcluster.nodes import (
    SPINE_LABEL,
    SWITCH_LABEL,
    fake_node,
    is_schedulable,
    network_labels,
)

READY = {"type": "Ready", "status": "True"}
NOT_READY = {"type": "Ready", "status": "False"}
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
PREFER_TAINT = {"key": "x", "effect": "PreferNoSchedule"}


def test_fake_node_has_the_allocatable_resources_and_labels_asked_for() -> None:
    node = fake_node(
        "n1", cpu="4", memory="8Gi", pods=20, labels={"zone": "a"}, extended={"nvidia.com/gpu": "2"}
    )

    assert node["status"]["allocatable"] == {
        "cpu": "4",
        "memory": "8Gi",
        "pods": "20",
        "nvidia.com/gpu": "2",
    }
    assert node["status"]["capacity"] == node["status"]["allocatable"]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
    assert node["metadata"]["labels"]["zone"] == "a"


@pytest.mark.parametrize(
    ("conditions", "taints", "schedulable"),
    [
        ([READY], [], True),
        ([READY], [PREFER_TAINT], True),
        ([READY], [NOT_READY_TAINT], False),
        ([READY], [{"key": "team", "value": "a", "effect": "NoSchedule"}], True),
        ([NOT_READY], [], False),
        ([], [], False),
    ],
    ids=[
        "ready",
        "ready-prefer-taint",
        "ready-but-tainted",
        "ready-with-own-taint",
        "not-ready",
        "no-conditions",
    ],
)
def test_is_schedulable(conditions: list[Any], taints: list[Any], schedulable: bool) -> None:
    node = {"spec": {"taints": taints}, "status": {"conditions": conditions}}
    assert is_schedulable(node) is schedulable


@pytest.mark.parametrize(
    ("count", "switches", "spines", "shown"),
    [
        (3, 0, 0, ["", "", ""]),
        (4, 2, 0, ["s0", "s0", "s1", "s1"]),
        (8, 4, 2, ["s0/p0", "s0/p0", "s1/p0", "s1/p0", "s2/p1", "s2/p1", "s3/p1", "s3/p1"]),
        (5, 2, 1, ["s0/p0", "s0/p0", "s0/p0", "s1/p0", "s1/p0"]),
        (10, 4, 0, ["s0", "s0", "s0", "s1", "s1", "s2", "s2", "s2", "s3", "s3"]),
        (2, 2, 2, ["s0/p0", "s1/p1"]),
    ],
    ids=["none", "two-switches", "switches-in-spines", "uneven", "even-as-can-be", "one-each"],
)
def test_network_labels(count: int, switches: int, spines: int, shown: list[str]) -> None:
    labels = network_labels(count, switches, spines)

    assert [
        "/".join(v for v in (node.get(SWITCH_LABEL), node.get(SPINE_LABEL)) if v) for node in labels
    ] == shown


@pytest.mark.parametrize(
    ("count", "switches", "spines", "error"),
    [
        (2, 3, 0, "--switches: 3 switches for 2 nodes"),
        (4, 2, 3, "--spines: 3 spines for 2 switches"),
        (4, 0, 1, "--spines: needs --switches"),
        (4, -1, 0, "--switches: must not be negative"),
        (4, 2, -1, "--spines: must not be negative"),
    ],
    ids=[
        "switches-over-nodes",
        "spines-over-switches",
        "spines-alone",
        "negative",
        "negative-spines",
    ],
)
def test_network_labels_refuses(count: int, switches: int, spines: int, error: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(error)):
        network_labels(count, switches, spines)


@given(st.data(), st.integers(min_value=1, max_value=40))
def test_switches_are_contiguous_even_blocks_each_in_one_spine(
    data: st.DataObject, count: int
) -> None:
    switches = data.draw(st.integers(min_value=1, max_value=count))
    spines = data.draw(st.integers(min_value=0, max_value=switches))

    labels = network_labels(count, switches, spines)

    order = [node[SWITCH_LABEL] for node in labels]
    blocks = [s for i, s in enumerate(order) if i == 0 or order[i - 1] != s]
    assert blocks == [f"s{j}" for j in range(switches)]  # each once, in order, none empty
    sizes = [order.count(s) for s in blocks]
    assert max(sizes) - min(sizes) <= 1
    if spines:
        spine_of = {node[SWITCH_LABEL]: node[SPINE_LABEL] for node in labels}
        assert len(spine_of) == switches  # (a switch in two spines would repeat a key)
        assert sorted(set(spine_of.values())) == sorted(f"p{k}" for k in range(spines))
    else:
        assert all(SPINE_LABEL not in node for node in labels)
