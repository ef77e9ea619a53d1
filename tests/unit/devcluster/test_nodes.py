"""Fake nodes carry the resources asked for; a node takes pods only when Ready and untainted."""

from __future__ import annotations

from typing import Any

import pytest

from extender.devcluster.nodes import fake_node, is_schedulable

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
