"""An object Lahar's model refuses is skipped with one line naming it by its Kind and the field,
the others applied; its level says whose fault it is. A built-in kind's object (Pod, Node,
PriorityClass) passed kube-apiserver's own validation, so refusing it is a bug in Lahar: an ERROR.
A CRD's object (a Volcano PodGroup, Queue or HyperNode) passed only the CRD's schema: its author's
mistake, a WARNING. Either line names the object alike from a list (whose items do not say their
kind) and from a watch, and says what the cache made of it; neither carries a traceback."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.log_fields import SUBJECT
from extender.api.topology_labels import LabelTier
from extender.cache import informer as informer_module
from extender.cache.informer import Informer
from extender.cache.kinds import (
    COSCHEDULING_GROUPS,
    HYPER_NODES,
    NATIVE_GROUPS,
    NODES,
    POD_GROUPS,
    PODS,
    PRIORITY_CLASSES,
    PROVISIONING_REQUESTS,
    QUEUES,
    Kind,
)
from extender.cache.state import ClusterState
from extender.controller import app as controller
from extender.controller.hypernodes import node_kind
from extender.webhook import store as webhook
from tests.builders import make_group, make_hyper_node, make_node, make_pod, make_queue


def _priority_class(name: str, value: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


FAULT = {
    logging.ERROR: "Lahar's model refuses {named}, which the API server accepted (a bug in Lahar)",
    logging.WARNING: "skipping {named}, which Lahar cannot read (its author's mistake: the CRD's "
    "schema let it through)",
}


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """An object of `kind` its model refuses beside one it reads, the level of the line, how it
    names the refused one, its log fields, and what it says is wrong with it."""

    kind: Kind[ClusterState, Any]
    bad: dict[str, Any]
    good: dict[str, Any]
    level: int
    named: str
    subject: dict[str, str]
    wrong: str

    @property
    def fault(self) -> str:
        return FAULT[self.level].format(named=self.named)


UNREADABLE = [
    pytest.param(
        Unreadable(
            PODS,
            make_pod("bad").uid("bad").cpu("lots").build(),
            make_pod("good").uid("good").cpu("1").build(),
            logging.ERROR,
            "Pod default/bad",
            {"kind": "Pod", "namespace": "default", "name": "bad"},
            "cpu: invalid quantity 'lots'",
        ),
        id="Pod",
    ),
    pytest.param(
        Unreadable(
            NODES,
            make_node("bad").cpu("lots").build(),
            make_node("good").build(),
            logging.ERROR,
            "Node bad",
            {"kind": "Node", "name": "bad"},
            "cpu: invalid quantity 'lots'",
        ),
        id="Node",
    ),
    pytest.param(
        Unreadable(
            PRIORITY_CLASSES,
            _priority_class("urgent", "high"),
            _priority_class("normal", 0),
            logging.ERROR,
            "PriorityClass urgent",
            {"kind": "PriorityClass", "name": "urgent"},
            "value\n  Input should be a valid integer",
        ),
        id="PriorityClass",
    ),
    pytest.param(
        Unreadable(
            QUEUES,
            make_queue("research").set("spec.weight", "heavy").build(),
            make_queue("default").build(),
            logging.WARNING,
            "Queue research",
            {"kind": "Queue", "name": "research"},
            "spec.weight\n  Input should be a valid integer",
        ),
        id="Queue",
    ),
    pytest.param(
        Unreadable(
            POD_GROUPS,
            make_group("tf").set("spec.minMember", "four").build(),
            make_group("mnist").build(),
            logging.WARNING,
            "PodGroup default/tf",
            {"kind": "PodGroup", "namespace": "default", "name": "tf"},
            "spec.minMember\n  Input should be a valid integer",
        ),
        id="PodGroup",
    ),
    pytest.param(
        Unreadable(
            HYPER_NODES,
            make_hyper_node("s0").tier("top").nodes("n0").build(),
            make_hyper_node("s1").nodes("n1").build(),
            logging.WARNING,
            "HyperNode s0",
            {"kind": "HyperNode", "name": "s0"},
            "spec.tier\n  Input should be a valid integer",
        ),
        id="HyperNode",
    ),
]


def _lines(*events: dict[str, Any]) -> Iterator[bytes]:
    for event in events:
        yield json.dumps(event, separators=(",", ":")).encode()


def _as_listed(item: dict[str, Any]) -> dict[str, Any]:
    """`item` as a list's items are: without the `kind` and `apiVersion` the list itself says."""
    return {field: value for field, value in item.items() if field not in ("kind", "apiVersion")}


def _said(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


def _listed(kind: Kind[ClusterState, Any], *items: dict[str, Any]) -> list[Any]:
    loop = asyncio.new_event_loop()
    try:
        return list(Informer(k8s.ApiClient(), kind, ClusterState(), loop)._decode_all(items))
    finally:
        loop.close()


@pytest.mark.parametrize("case", UNREADABLE)
def test_a_listed_object_lahar_cannot_read_is_one_line_by_whose_fault_it_is(
    case: Unreadable, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="extender.cache.informer"):
        decoded = _listed(case.kind, _as_listed(case.bad), _as_listed(case.good))
    assert [item.metadata.name for item in decoded] == [case.good["metadata"]["name"]]
    [line] = _said(caplog)
    assert line.levelno == case.level and line.exc_info is None
    said = line.getMessage()
    assert said.startswith(f"list of {case.kind.name}: {case.fault}; it is left out of the cache: ")
    assert case.wrong in said
    assert getattr(line, SUBJECT) == case.subject


@pytest.mark.parametrize("case", UNREADABLE)
@pytest.mark.parametrize(
    ("event", "outcome"),
    [
        ("ADDED", "it is left out of the cache"),
        ("MODIFIED", "the cache keeps its previous version"),
        ("DELETED", "the cache keeps it, though it is gone"),
    ],
)
def test_a_watched_object_lahar_cannot_read_is_named_as_a_listed_one(
    case: Unreadable,
    event: str,
    outcome: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent = _lines({"type": event, "object": case.bad}, {"type": "ADDED", "object": case.good})
    monkeypatch.setattr(informer_module, "watch_lines", lambda *args, **kwargs: sent)
    applied: list[tuple[str, str]] = []

    def upsert(state: ClusterState, item: Any) -> None:
        applied.append(("upsert", item.metadata.name))

    def delete(state: ClusterState, item: Any) -> None:
        applied.append(("delete", item.metadata.name))

    loop = asyncio.new_event_loop()
    watched = dataclasses.replace(case.kind, upsert=upsert, delete=delete)
    following = Informer(k8s.ApiClient(), watched, ClusterState(), loop)
    with caplog.at_level(logging.INFO, logger="extender.cache.informer"):
        following._watch("10")
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()
    assert applied == [("upsert", case.good["metadata"]["name"])]
    [line] = _said(caplog)
    assert line.levelno == case.level and line.exc_info is None
    said = line.getMessage()
    assert said.startswith(f"watch of {case.kind.name}: {case.fault}; {outcome}: ")
    assert case.wrong in said
    assert getattr(line, SUBJECT) == case.subject


@pytest.mark.parametrize(
    ("kind", "level", "named", "subject"),
    [
        (QUEUES, logging.WARNING, "a Queue whose name cannot be read", {"kind": "Queue"}),
        (PODS, logging.ERROR, "a Pod whose name cannot be read", {"kind": "Pod"}),
    ],
)
def test_an_object_without_a_readable_name_is_named_by_its_kind(
    kind: Kind[ClusterState, Any],
    level: int,
    named: str,
    subject: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="extender.cache.informer"):
        assert _listed(kind, {"metadata": 3, "spec": []}) == []
    [line] = _said(caplog)
    assert line.levelno == level
    assert line.getMessage().startswith(f"list of {kind.name}: {FAULT[level].format(named=named)}")
    assert getattr(line, SUBJECT) == subject


ZONES = [LabelTier("topology.kubernetes.io/zone", "zone")]
BUILT_IN = [
    pytest.param(NODES, True, id="extender: nodes"),
    pytest.param(PODS, True, id="extender: pods"),
    pytest.param(PRIORITY_CLASSES, True, id="extender: priorityclasses"),
    pytest.param(NATIVE_GROUPS, True, id="extender: podgroups.scheduling.k8s.io"),
    pytest.param(POD_GROUPS, False, id="extender: podgroups.scheduling.volcano.sh"),
    pytest.param(COSCHEDULING_GROUPS, False, id="extender: podgroups.scheduling.x-k8s.io"),
    pytest.param(QUEUES, False, id="extender: queues"),
    pytest.param(HYPER_NODES, False, id="extender: hypernodes"),
    pytest.param(PROVISIONING_REQUESTS, False, id="extender: provisioningrequests"),
    pytest.param(controller.PODS, True, id="controller: pods"),
    pytest.param(node_kind(ZONES), True, id="controller: nodes"),
    pytest.param(controller.JOBS, False, id="controller: jobs"),
    pytest.param(controller.GROUPS, False, id="controller: podgroups"),
    pytest.param(controller.COMMANDS, False, id="controller: commands"),
    pytest.param(webhook.NATIVE_GROUPS, True, id="webhook: podgroups.scheduling.k8s.io"),
    pytest.param(webhook.GROUPS, False, id="webhook: podgroups.scheduling.volcano.sh"),
    pytest.param(webhook.COSCHEDULING_GROUPS, False, id="webhook: podgroups.x-k8s.io"),
    pytest.param(webhook.QUEUES, False, id="webhook: queues"),
]


@pytest.mark.parametrize(("kind", "built_in"), BUILT_IN)
def test_a_kind_is_built_in_when_kube_apiserver_serves_it_itself(
    kind: Kind[Any, Any], built_in: bool
) -> None:
    assert kind.built_in == built_in


@pytest.mark.parametrize(
    "kind", [pytest.param(case.values[0], id=case.id) for case in BUILT_IN if case.values[1]]
)
def test_a_built_in_kind_names_the_kind_its_listed_objects_do_not_say(kind: Kind[Any, Any]) -> None:
    """kube-apiserver leaves `kind` out of a built-in list's items (a CRD's items keep it)."""
    assert kind.object_kind[:1].isupper()
