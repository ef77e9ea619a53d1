"""A queue changed for a what-if: the edit read, applied, and refused as the webhook refuses it."""

from __future__ import annotations

import re

import pytest

from extender.simulate.queue_edits import Edit, apply, parse_edit
from extender.simulate.trace import Trace
from tests.builders import make_trace


def tree() -> Trace:
    """ml (weight 2) with children qa and qb, beside the default queue."""
    return (
        make_trace()
        .nodes(2, cpu="8", memory="32Gi")
        .queue("ml", weight=2, guarantee={"cpu": "4"}, deserved={"cpu": "8"})
        .queue("qa", parent="ml")
        .queue("qb", parent="ml")
        .model()
    )


@pytest.mark.parametrize(
    ("text", "edit"),
    [
        ("qa.weight=3", Edit("qa", "weight", "", "3")),
        ("qa.priority=5", Edit("qa", "priority", "", "5")),
        ("qa.reclaimable=false", Edit("qa", "reclaimable", "", "false")),
        ("qa.state=Closed", Edit("qa", "state", "", "Closed")),
        ("qa.capability.cpu=4", Edit("qa", "capability", "cpu", "4")),
        ("qa.guarantee.nvidia.com/gpu=2", Edit("qa", "guarantee", "nvidia.com/gpu", "2")),
        ("qa.deserved.memory=", Edit("qa", "deserved", "memory", "")),
    ],
)
def test_an_edit_is_read(text: str, edit: Edit) -> None:
    assert parse_edit(text) == edit
    assert str(edit) == text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("qa.weight", "expected QUEUE.FIELD=VALUE"),
        ("weight=3", "expected QUEUE.FIELD=VALUE"),
        ("qa.colour=red", "no field 'colour'"),
        ("qa.capability=4", "no field 'capability'"),
        ("qa.weight=heavy", "weight is a whole number"),
        ("qa.reclaimable=yes", "reclaimable is true or false"),
        ("qa.state=Closing", "state is Open or Closed"),
        ("qa.capability.cpu=lots", "capability.cpu: invalid quantity 'lots'"),
    ],
)
def test_a_bad_edit_is_named(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)) as raised:
        parse_edit(text)
    assert repr(text) in str(raised.value)


def test_edits_change_only_their_queue() -> None:
    edited = apply(tree(), [parse_edit("qa.weight=3"), parse_edit("qa.capability.cpu=4")])
    queues = {queue.name: queue for queue in edited.queues}
    assert (queues["qa"].weight, queues["qa"].capability) == (3, {"cpu": "4"})
    assert queues["qb"] == {q.name: q for q in tree().queues}["qb"]
    assert queues["ml"] == {q.name: q for q in tree().queues}["ml"]


def test_an_empty_value_removes_a_resource() -> None:
    edited = apply(tree(), [parse_edit("ml.guarantee.cpu=")])
    assert {q.name: q for q in edited.queues}["ml"].guarantee == {}


def test_the_default_queue_may_be_edited_though_the_trace_does_not_list_it() -> None:
    edited = apply(tree(), [parse_edit("default.weight=4")])
    assert {q.name: q for q in edited.queues}["default"].weight == 4


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("zz.weight=2", "no queue zz (known: default, ml, qa, qb)"),
        ("qa.weight=70000", "Queue qa is invalid: spec.weight: must be at most 65535"),
        ("qa.guarantee.cpu=6", "more than ml's guarantee"),
        ("qa.weight=0", "weight"),
    ],
    ids=["no such queue", "the webhook's weight limit", "the webhook's tree rule", "the trace's"],
)
def test_a_change_the_cluster_would_refuse_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        apply(tree(), [parse_edit(text)])
