"""The decode benchmark's fixtures are what they say, and its Structs read what Lahar's models read.

`tests/data/decode/` holds raw watch lines and verb bodies recorded from a real API server
(`benchmarks/decode.py --capture`). These tests hold them to their description (a gang pod's four
events, with managedFields; a filter body for that pod with 420 candidates; its bind body), decode
each with today's informer path, and check that every decoder the benchmark counts as reading the
same does, and that the check would catch a Struct that reads differently.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from extender.api.candidates import CandidateParser
from extender.api.objects import Node, Pod
from extender.api.resources import Resources
from extender.api.scheduling import GANG_GATE, PodGroup, Queue
from extender.api.wire import ExtenderBindingArgs
from extender.cache.informer import WatchEvent
from extender.cache.kinds import NODES, POD_GROUPS, PODS, QUEUES, Kind

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "tests" / "data" / "decode"
# Each fixture's kind as the informer decodes its lines: `WatchEvent[kind.model]`.
EVENTS: dict[str, type[WatchEvent[Any]]] = {
    "pod": WatchEvent[Pod],
    "node": WatchEvent[Node],
    "podgroup": WatchEvent[PodGroup],
    "queue": WatchEvent[Queue],
}


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("decode_benchmark", ROOT / "benchmarks/decode.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up while being made)
    spec.loader.exec_module(module)
    return module


BENCH = _benchmark()
FIXTURES = BENCH.load(FOLDER)


def lines(kind: str) -> list[bytes]:
    return (FOLDER / f"{kind}.jsonl").read_bytes().splitlines()


@pytest.mark.parametrize(
    ("kind", "informed"),
    [("pod", PODS), ("node", NODES), ("podgroup", POD_GROUPS), ("queue", QUEUES)],
)
def test_events_are_decoded_into_the_informers_models(kind: str, informed: Kind[Any, Any]) -> None:
    assert EVENTS[kind].model_fields["object"].annotation is informed.model


@pytest.mark.parametrize("kind", list(EVENTS))
def test_watch_fixtures_are_raw_events_todays_informer_reads(kind: str) -> None:
    recorded = lines(kind)
    assert recorded, f"{kind}.jsonl holds no event"
    events = EVENTS[kind]
    for line in recorded:
        raw = json.loads(line)
        assert list(raw) == ["type", "object"], "not a watch event as the API server writes it"
        assert raw["object"]["metadata"]["managedFields"], "managedFields were left out"
        event = events.model_validate_json(line)
        assert event.type in ("ADDED", "MODIFIED")
        assert (
            event.object.metadata.resource_version == raw["object"]["metadata"]["resourceVersion"]
        )


def test_pod_fixture_is_a_gang_pod_created_gated_then_freed_bound_and_running() -> None:
    pods = [EVENTS["pod"].model_validate_json(line) for line in lines("pod")]
    seen = [
        (
            event.type,
            [gate.name for gate in event.object.spec.scheduling_gates],
            bool(event.object.spec.node_name),
            event.object.status.phase,
        )
        for event in pods
    ]
    assert seen == [
        ("ADDED", [GANG_GATE], False, "Pending"),
        ("MODIFIED", [], False, "Pending"),
        ("MODIFIED", [], True, "Pending"),
        ("MODIFIED", [], True, "Running"),
    ]
    pod = pods[-1].object
    assert pod.metadata.owner_names == ("tensorflow-benchmark",)
    assert pod.metadata.annotations["volcano.sh/task-spec"] == "worker"
    assert pod.request["cpu"] == 2000
    assert {t.key for t in pod.spec.tolerations} >= {BENCH.TAINT, "nvidia.com/gpu"}
    raw = json.loads(lines("pod")[-1])["object"]["spec"]
    assert raw["volumes"] and raw["containers"][0]["env"], "the pod lost its volumes or env"


def test_filter_body_is_the_freed_pod_with_420_candidates() -> None:
    body = (FOLDER / "extender-args.json").read_bytes()
    freed = json.loads(lines("pod")[1])["object"]
    sent = json.loads(body)
    assert list(sent) == ["Pod", "Nodes", "NodeNames"]  # (Go's field order: NodeNames last)
    assert "managedFields" not in sent["Pod"]["metadata"]  # (kube-scheduler's informer drops them)
    assert sent["Pod"]["metadata"]["resourceVersion"] == freed["metadata"]["resourceVersion"]
    # kube-scheduler's adaptive sampling at 1,000 nodes: 42% of them.
    assert len(sent["NodeNames"]) == 420
    args, candidates = CandidateParser().parse(body)
    assert args.pod.metadata.uid == freed["metadata"]["uid"]
    assert candidates.first() == BENCH.NODE


def test_bind_body_names_the_bound_pod_and_its_node() -> None:
    bound = json.loads(lines("pod")[2])["object"]
    args = ExtenderBindingArgs.model_validate_json((FOLDER / "binding-args.json").read_bytes())
    assert (args.pod_name, args.pod_namespace, args.pod_uid, args.node) == (
        bound["metadata"]["name"],
        bound["metadata"]["namespace"],
        bound["metadata"]["uid"],
        bound["spec"]["nodeName"],
    )


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_decoders_counted_as_the_same_read_what_today_reads(fixture: Any) -> None:
    same = [d.column for d in fixture.decoders if d.same]
    assert same[:1] == ["today"]
    assert "msgspec" in same
    assert BENCH.check(fixture) == []


def _running_pod() -> tuple[Any, Any]:
    """The last pod event, decoded today and by the benchmark's Struct."""
    line = lines("pod")[-1]
    today = EVENTS["pod"].model_validate_json(line).object
    decode = BENCH.struct_decoder(BENCH.Event[BENCH.PodStruct])
    return today, decode(line).object


def _meta(pod: Any, **changes: Any) -> Any:
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, **changes))


def _spec(pod: Any, **changes: Any) -> Any:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, **changes))


def _first_request(pod: Any, requests: Resources) -> Any:
    container = pod.spec.containers[0]
    resources = msgspec.structs.replace(container.resources, requests=requests)
    changed = msgspec.structs.replace(container, resources=resources)
    return _spec(pod, containers=[changed, *pod.spec.containers[1:]])


MISREAD: list[tuple[str, Callable[[Any], Any], str]] = [
    ("a label", lambda p: _meta(p, labels={**p.metadata.labels, "x": "y"}), ".metadata.labels"),
    ("an owner", lambda p: _meta(p, owner_references=()), ".metadata.ownerReferences"),
    ("the node", lambda p: _spec(p, node_name="elsewhere"), ".spec.nodeName"),
    ("a toleration", lambda p: _spec(p, tolerations=p.spec.tolerations[1:]), ".spec.tolerations"),
    (
        "a request",
        lambda p: _first_request(p, Resources({"cpu": 1})),
        ".spec.containers[0].resources.requests",
    ),
    (
        "PodScheduled",
        lambda p: msgspec.structs.replace(
            p, status=msgspec.structs.replace(p.status, conditions=())
        ),
        ".status.conditions",
    ),
]


@pytest.mark.parametrize(("changed", "change", "where"), MISREAD, ids=[m[0] for m in MISREAD])
def test_a_struct_reading_differently_is_named_where(
    changed: str, change: Callable[[Any], Any], where: str
) -> None:
    today, struct = _running_pod()
    assert BENCH.differences(today, struct) == []
    found = BENCH.differences(today, change(struct))
    assert found, f"{changed} read differently went unnoticed"
    assert all(problem.startswith(where) for problem in found), found
