"""What decoding costs Lahar per event: today's pydantic path against typed structs.

    .venv/bin/python benchmarks/decode.py [--repeat 50] [--number 100]
    .venv/bin/python benchmarks/decode.py --capture     # records tests/data/decode/ anew

The fixtures (`tests/data/decode/`) are what a real API server sent: `--capture` starts a dev
cluster with Lahar, runs Volcano's TensorFlow example (`examples/tf-dist-mnist.yaml`, its workers
waiting for the ps, so their pods are made behind Lahar's gate) in a Queue of its own on a KWOK
node of its own (labels, a taint the pods tolerate, GPUs), and keeps the raw watch lines, with
managedFields, exactly as they came: `pod.jsonl` (the four events of one worker: created behind
the gate, gate lifted, bound, running), `node.jsonl` (created, then KWOK's status writes),
`podgroup.jsonl` and `queue.jsonl` (created, then Lahar's status write). `extender-args.json`
is the filter body kube-scheduler sends for that pod once its gate is lifted at 1,000 nodes (420
candidate names, `benchmarks/verbs.py`'s sampling; the pod without managedFields, which
kube-scheduler's informer drops), `binding-args.json` its bind body.

Each fixture is decoded `--number` times in a row, `--repeat` times; printed is the best round's
microseconds per decode (`time.perf_counter`, the garbage collector on, as in the extender). Many
short rounds: on a machine shared with other work, some rounds run undisturbed. The decoders:

- today: exactly what the extender runs. A watch line: the informer's bookmark test, then
  `WatchEvent[kind.model].model_validate_json` (`cache.informer`). A filter body:
  `CandidateParser.parse` with the cache's `known_pod`, which holds this very pod (the watch saw
  it first), as `server.app` wires it. A bind body: `ExtenderBindingArgs.model_validate_json`
  (`server.routes`).
- cold (filter): `CandidateParser.parse` when the cache does not hold the pod, which is parsed;
  pydantic (filter): `ExtenderArgs.model_validate_json` of the whole body, as a body of another
  shape is read.
- json+mv / orjson+mv: today's models from `json.loads` / `orjson.loads` and `model_validate`
  (the way a list's items are read).
- lean: pydantic models declaring the Structs' fields without a validator of Lahar's
  (quantities left as strings, nothing interned or shared): what pydantic itself costs.
- msgspec: `msgspec.json.Decoder` into frozen Structs declaring only the fields Lahar reads, the
  quantities parsed into `Resources` by a `dec_hook`: the same information as today's models,
  checked field by field on every fixture before anything is timed.
- msgspec-q: the same with every ResourceList read as empty: the difference is what parsing the
  quantities costs.
- json / orjson: `json.loads` / `orjson.loads` into plain dicts and lists, for scale.

Today's models share instances (a container, a toleration) through a cache keyed by the input;
decoding one line again finds them there, as a job's second replica does. Last, what a bound pod's
decoding costs (its watch events and its two verb bodies) today, with msgspec, and with the
fastest decoder that reads the same for each.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
import tempfile
import threading
import time
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec
import orjson
import yaml
from kubernetes import client as k8s
from pydantic import BaseModel, ConfigDict, Field, create_model

from extender import devcluster
from extender.api.batch import JOB_NAME_KEY
from extender.api.candidates import CandidateParser
from extender.api.objects import QUOTA_USAGE_PREFIXES, ObjectMeta
from extender.api.resources import EMPTY, Resources
from extender.api.scheduling import API_VERSION, DEFAULT_QUEUE
from extender.api.wire import ExtenderArgs, ExtenderBindingArgs
from extender.cache.informer import BOOKMARK, WatchEvent
from extender.cache.kinds import NODES, POD_GROUPS, PODS, QUEUES, Kind
from extender.cache.state import ClusterState
from extender.devcluster.nodes import is_schedulable
from extender.kube import apply_object, connect, list_objects, read, wait_until
from extender.kube.watch import interrupt, list_pages, watch_lines

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "decode"
EXAMPLE = ROOT / "examples" / "tf-dist-mnist.yaml"
JOB = "tensorflow-benchmark"
WORKER = f"{JOB}-worker-0"  # the pod whose events are kept
NODE, QUEUE, TAINT = "decode-n0", "decode", "lahar.io/decode"
SCHEDULER_NODES = 1000  # the cluster size whose candidate list ExtenderArgs carries
WATCHED = ("pod", "node", "podgroup", "queue")  # the watch fixtures, `<kind>.jsonl`


# -- the fields Lahar reads, as msgspec Structs ------------------------------------------------


class Fields(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """Kubernetes' camelCase on the wire, snake_case in Python (the names today's models use),
    unknown fields skipped; frozen, as the cache's objects are (each Struct says so again, for
    type checkers), and untracked by the garbage collector (decoded JSON holds no cycles)."""


class MinQuantities(Resources):
    """A PodGroup's minResources: parsed leaving quota usage names out (`count/pods`), as
    `api.objects.MinResources` is."""

    __slots__ = ()


class Owner(Fields, frozen=True):
    name: str = ""


class Meta(Fields, frozen=True):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    deletion_timestamp: str | None = None
    owner_references: tuple[Owner, ...] = ()


class GroupMeta(Meta, frozen=True):
    creation_timestamp: str = ""


class Requirements(Fields, frozen=True):
    requests: Resources = EMPTY


class Container(Fields, frozen=True):
    resources: Requirements = msgspec.field(default_factory=Requirements)
    restart_policy: str | None = None


class Toleration(Fields, frozen=True):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class SelectorRequirement(Fields, frozen=True):
    key: str
    operator: str
    values: list[str] = []


class SelectorTerm(Fields, frozen=True):
    match_expressions: list[SelectorRequirement] = []
    match_fields: list[SelectorRequirement] = []


class NodeSelector(Fields, frozen=True):
    node_selector_terms: list[SelectorTerm] = []


class NodeAffinity(Fields, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None


class Affinity(Fields, frozen=True):
    node_affinity: NodeAffinity | None = None


class Gate(Fields, frozen=True):
    name: str = ""


class SchedulingGroup(Fields, frozen=True):
    pod_group_name: str = ""


class Condition(Fields, frozen=True):
    type: str = ""
    status: str = ""


class PodSpec(Fields, frozen=True):
    node_name: str = ""
    node_selector: dict[str, str] = {}
    tolerations: list[Toleration] = []
    affinity: Affinity | None = None
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    priority_class_name: str = ""
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: Resources = EMPTY
    resources: Requirements | None = None
    scheduling_gates: tuple[Gate, ...] = ()
    scheduling_group: SchedulingGroup | None = None


class PodStatus(Fields, frozen=True):
    phase: str = ""
    conditions: tuple[Condition, ...] = ()


class PodStruct(Fields, frozen=True):
    metadata: Meta = msgspec.field(default_factory=Meta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class Taint(Fields, frozen=True):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(Fields, frozen=True):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(Fields, frozen=True):
    allocatable: Resources = EMPTY


class NodeStruct(Fields, frozen=True):
    metadata: Meta = msgspec.field(default_factory=Meta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class NetworkTopology(Fields, frozen=True):
    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str | None = None


class SubGroupPolicy(Fields, frozen=True):
    name: str = ""
    network_topology: NetworkTopology | None = None
    sub_group_size: int | None = None
    min_sub_groups: int | None = None
    label_selector: dict[str, Any] | None = None
    match_label_keys: list[str] | None = None


class PodGroupSpec(Fields, frozen=True):
    queue: str = DEFAULT_QUEUE
    min_member: int = 0
    min_task_member: dict[str, int] = {}
    priority_class_name: str = ""
    min_resources: MinQuantities = MinQuantities()
    network_topology: NetworkTopology | None = None
    sub_group_policy: list[SubGroupPolicy] | None = None


class PodGroupCondition(Fields, frozen=True):
    type: str = ""
    status: str = ""
    transition_id: str = msgspec.field(default="", name="transitionID")
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


class PodGroupStatus(Fields, frozen=True):
    phase: str = ""
    conditions: list[PodGroupCondition] = []
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PodGroupStruct(Fields, frozen=True):
    metadata: GroupMeta = msgspec.field(default_factory=GroupMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class Guarantee(Fields, frozen=True):
    resource: Resources = EMPTY


class Cluster(Fields, frozen=True):
    name: str = ""
    weight: int = 0
    capacity: Resources = EMPTY


class NodeGroups(Fields, frozen=True):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None


class QueueAffinity(Fields, frozen=True):
    node_group_affinity: NodeGroups | None = None
    node_group_anti_affinity: NodeGroups | None = None


class QueueSpec(Fields, frozen=True):
    weight: Annotated[int, msgspec.Meta(ge=1)] = 1
    capability: Resources = EMPTY
    deserved: Resources = EMPTY
    guarantee: Guarantee = msgspec.field(default_factory=Guarantee)
    reclaimable: bool = True
    priority: int = 0
    parent: str = ""
    extend_clusters: list[Cluster] | None = None
    affinity: QueueAffinity | None = None
    queue_type: str | None = msgspec.field(default=None, name="type")
    dequeue_strategy: Literal["fifo", "traverse"] | None = None


class Reservation(Fields, frozen=True):
    nodes: list[str] | None = None
    resource: Resources = EMPTY


class QueueStatus(Fields, frozen=True):
    state: str = ""
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    completed: int = 0
    unknown: int = 0
    reservation: Reservation | None = None
    allocated: Resources = EMPTY
    deserved: Resources = EMPTY


class QueueStruct(Fields, frozen=True):
    metadata: Meta = msgspec.field(default_factory=Meta)
    spec: QueueSpec = msgspec.field(default_factory=QueueSpec)
    status: QueueStatus = msgspec.field(default_factory=QueueStatus)


T = TypeVar("T")


class Event(msgspec.Struct, Generic[T], frozen=True, gc=False):
    type: str
    object: T


NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class ArgsStruct(msgspec.Struct, rename="pascal", frozen=True, gc=False):
    """ExtenderArgs: the Go field names, the pod's fields as a watched pod's; a NodeList is kept
    raw, as today's `NodeList` keeps its items."""

    pod: PodStruct
    nodes: dict[str, Any] | None = None
    node_names: list[str] | None = None


class BindingStruct(msgspec.Struct, rename="pascal", frozen=True, gc=False):
    pod_name: NonEmpty
    pod_namespace: NonEmpty
    node: NonEmpty
    pod_uid: str = msgspec.field(default="", name="PodUID")


STRUCTS: dict[str, type[msgspec.Struct]] = {
    "pod": PodStruct,
    "node": NodeStruct,
    "podgroup": PodGroupStruct,
    "queue": QueueStruct,
}
KINDS: dict[str, Kind[ClusterState, Any]] = {
    "pod": PODS,
    "node": NODES,
    "podgroup": POD_GROUPS,
    "queue": QUEUES,
}


def parse_quantities(kind: type, value: Any) -> Any:
    """msgspec's `dec_hook`: a ResourceList into `Resources`, as today's models parse it."""
    if kind is MinQuantities and isinstance(value, dict):
        kept = {n: q for n, q in value.items() if not str(n).startswith(QUOTA_USAGE_PREFIXES)}
        return MinQuantities.parse(kept)
    if kind is Resources and isinstance(value, dict):
        return Resources.parse(value)
    raise NotImplementedError(f"no decoding of {kind.__name__} from {type(value).__name__}")


def skip_quantities(kind: type, value: Any) -> Any:
    """A `dec_hook` that reads no quantity (every ResourceList empty): what parsing them costs."""
    return MinQuantities() if kind is MinQuantities else EMPTY


def struct_decoder(kind: Any, *, quantities: bool = True) -> Callable[[bytes], Any]:
    """A decoder of JSON into `kind` (made once, as the informer makes its event model once)."""
    hook = parse_quantities if quantities else skip_quantities
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(kind, dec_hook=hook)
    return decoder.decode


# -- the same fields as pydantic models without Lahar's validators -----------------------------

LEAN = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)
Quantity = str | int | float
_lean_models: dict[type, type[BaseModel]] = {}


def lean_model(struct: type[msgspec.Struct]) -> type[BaseModel]:
    """A pydantic model declaring what `struct` declares, under the same wire names and defaults,
    with quantities kept as they came."""
    if struct not in _lean_models:
        fields: dict[str, Any] = {}
        for field in msgspec.structs.fields(struct):
            if field.default_factory is not msgspec.NODEFAULT:
                made = field.default_factory
                factory = lean_model(made) if _is_struct(made) else made
                default = Field(default_factory=factory, alias=field.encode_name)
            elif field.default is msgspec.NODEFAULT:
                default = Field(alias=field.encode_name)
            elif isinstance(field.default, Resources):
                default = Field(default_factory=dict, alias=field.encode_name)
            else:
                default = Field(default=field.default, alias=field.encode_name)
            fields[field.name] = (_lean_type(field.type), default)
        _lean_models[struct] = create_model(f"Lean{struct.__name__}", __config__=LEAN, **fields)
    return _lean_models[struct]


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)


def _lean_type(kind: Any) -> Any:
    if _is_struct(kind):
        return lean_model(kind)
    if isinstance(kind, type) and issubclass(kind, Resources):
        return dict[str, Quantity]
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Annotated:
        return _lean_type(args[0])
    if origin in (types.UnionType, typing.Union):
        return typing.Union[tuple(_lean_type(a) for a in args)]  # noqa: UP007
    if origin in (list, tuple, dict):
        return origin[tuple(a if a is Ellipsis else _lean_type(a) for a in args)]
    return kind


def lean_event(struct: type[msgspec.Struct]) -> type[BaseModel]:
    return create_model(
        f"LeanEvent{struct.__name__}",
        __config__=LEAN,
        type=(str, ...),
        object=(lean_model(struct), ...),
    )


# -- reading the same ---------------------------------------------------------------------------


def differences(model: Any, struct: Any, path: str = "") -> list[str]:
    """Where `struct` reads differently from today's `model` (each field the Struct declares, read
    from both by its Python name); [] when it reads the same."""
    if isinstance(struct, msgspec.Struct):
        if not isinstance(model, BaseModel):
            return [f"{path or '.'}: today's model holds {model!r}"]
        found: list[str] = []
        for field in msgspec.structs.fields(struct):
            mine, theirs = _read_both(model, struct, field.name)
            found += differences(theirs, mine, f"{path}.{field.encode_name}")
        return found
    if struct is None and isinstance(model, BaseModel):
        # (today's model holds an empty object where the Struct holds none: `spec.affinity`)
        return (
            []
            if model == type(model).model_validate({})
            else [f"{path}: none, today's model has {model!r}"]
        )
    if isinstance(struct, list | tuple) and isinstance(model, list | tuple):
        if len(struct) != len(model):
            return [f"{path}: {len(struct)} items, today's model has {len(model)}"]
        return [
            problem
            for index, (one, other) in enumerate(zip(model, struct, strict=True))
            for problem in differences(one, other, f"{path}[{index}]")
        ]
    return [] if struct == model else [f"{path}: {struct!r}, today's model has {model!r}"]


def _read_both(model: BaseModel, struct: msgspec.Struct, name: str) -> tuple[Any, Any]:
    """The field `name` of the Struct and of today's model, as the engine reads it."""
    mine = getattr(struct, name)
    if isinstance(struct, Meta) and isinstance(model, ObjectMeta) and name == "owner_references":
        return tuple(owner.name for owner in mine), model.owner_names
    if isinstance(struct, PodStatus) and name == "conditions":
        # (today's model keeps only PodScheduled: the one condition Lahar reads)
        return tuple(c for c in mine if c.type == "PodScheduled"), getattr(model, name)
    return mine, getattr(model, name)


# -- fixtures from a real API server ---------------------------------------------------------


class Recorder:
    """One raw watch, from `version`, on a thread: every event line as the API server sent it
    (bookmarks left out)."""

    def __init__(self, api: k8s.ApiClient, path: str, fields: str = "") -> None:
        self.api, self.path, self.fields = api, path, fields
        self.lines: list[bytes] = []
        self._response: Any = None
        self._done = threading.Event()
        _, version = list_pages(api, path, fields=fields)
        self._thread = threading.Thread(target=self._run, args=(version,), daemon=True)
        self._thread.start()

    def _run(self, version: str) -> None:
        def opened(response: Any) -> None:
            self._response = response

        lines = watch_lines(
            self.api, self.path, version, fields=self.fields, timeout_seconds=600, on_open=opened
        )
        try:
            for line in lines:
                if b'"type":"BOOKMARK"' not in line[:32]:
                    self.lines.append(line)
        except Exception:
            if not self._done.is_set():  # (stopping closes the connection under the read)
                raise

    def stop(self) -> list[bytes]:
        self._done.set()
        if self._response is not None:
            interrupt(self._response)
        self._thread.join(10)
        return list(self.lines)


def capture(out: Path) -> None:
    """Start a dev cluster with Lahar, run Volcano's TensorFlow example as a gang on a KWOK node
    of its own, record the raw watch events of one worker pod, the node, the PodGroup and the
    Queue, and the verb bodies kube-scheduler sends for that pod; tear the cluster down."""
    version = devcluster.chosen_kubernetes()
    binaries = devcluster.ensure_binaries(quiet=True, kubernetes=version)
    with tempfile.TemporaryDirectory(prefix="lahar-decode-") as folder:
        options = devcluster.ClusterOptions(
            state_dir=Path(folder) / "cluster",
            die_with_parent=True,
            with_lahar=True,
            kubernetes=version,
        )
        cluster = devcluster.up(options, binaries)
        try:
            with connect(cluster.kubeconfig) as api:
                recorded = _run_example(api)
        finally:
            cluster.down()
    _write(out, recorded)


def _run_example(api: k8s.ApiClient) -> dict[str, list[bytes]]:
    namespace = f"decode-{secrets.token_hex(3)}"
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", namespace),
        timeout=60,
        what=f"the default ServiceAccount in {namespace}",
    )
    recorders = {
        "pod": Recorder(api, f"/api/v1/namespaces/{namespace}/pods", f"metadata.name={WORKER}"),
        "node": Recorder(api, "/api/v1/nodes", f"metadata.name={NODE}"),
        "podgroup": Recorder(api, f"/apis/{API_VERSION}/namespaces/{namespace}/podgroups"),
        "queue": Recorder(api, f"/apis/{API_VERSION}/queues", f"metadata.name={QUEUE}"),
    }
    node = devcluster.fake_node(
        NODE,
        cpu="32",
        memory="256Gi",
        labels={"topology.kubernetes.io/zone": "zone-a", "node.kubernetes.io/instance-type": "g5"},
        extended={"nvidia.com/gpu": "4"},
        taints=[{"key": TAINT, "value": namespace, "effect": "NoSchedule"}],
    )
    apply_object(api, node)
    wait_until(
        lambda: is_schedulable(read(api, "v1", "Node", NODE) or {}),
        timeout=60,
        what=f"node {NODE} to be Ready",
    )
    apply_object(api, _queue())
    apply_object(api, _job(namespace))
    wait_until(
        lambda: _running(api, namespace) == 3,
        timeout=120,
        what=f"the 3 pods of Job {namespace}/{JOB} to run",
    )
    # Lahar writes the PodGroup's and the Queue's status after the pods run; KWOK renews the
    # node's status: give them time to appear in the watches.
    time.sleep(15)
    return {kind: recorder.stop() for kind, recorder in recorders.items()}


def _queue() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Queue",
        "metadata": {"name": QUEUE},
        "spec": {
            "weight": 2,
            "reclaimable": True,
            "capability": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
        },
    }


def _job(namespace: str) -> dict[str, Any]:
    """Volcano's TensorFlow example in `namespace` and the decode Queue, its pods tolerating and
    selecting the node made for them."""
    body: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    body["metadata"]["namespace"] = namespace
    body["spec"]["queue"] = QUEUE
    # The workers wait for the ps to run, so theirs are made behind Lahar's gate (a job whose
    # pods all come at once has them made once its gang is admitted, ungated): the gang is the
    # ps alone.
    body["spec"]["minAvailable"] = 1
    for task in body["spec"]["tasks"]:
        if task["name"] == "worker":
            task["dependsOn"] = {"name": ["ps"]}
            task["minAvailable"] = 0
        spec = task["template"]["spec"]
        spec["nodeSelector"] = {"kubernetes.io/hostname": NODE}
        spec["tolerations"] = [
            {"key": TAINT, "operator": "Equal", "value": namespace, "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ]
    return body


def _running(api: k8s.ApiClient, namespace: str) -> int:
    pods = list_objects(
        api, "v1", "Pod", namespace=namespace, label_selector=f"{JOB_NAME_KEY}={JOB}"
    )
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")


def _write(out: Path, recorded: dict[str, list[bytes]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for kind, lines in recorded.items():
        if not lines:
            raise SystemExit(f"no {kind} watch event was recorded")
        (out / f"{kind}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    pods = [json.loads(line)["object"] for line in recorded["pod"]]
    queued = next(
        p for p in pods if not p["spec"].get("schedulingGates") and not p["spec"].get("nodeName")
    )
    bound = next(p for p in pods if p["spec"].get("nodeName"))
    (out / "extender-args.json").write_bytes(_extender_args(queued))
    binding = {
        "PodName": bound["metadata"]["name"],
        "PodNamespace": bound["metadata"]["namespace"],
        "PodUID": bound["metadata"]["uid"],
        "Node": bound["spec"]["nodeName"],
    }
    (out / "binding-args.json").write_bytes(_go_json(binding))
    print(f"wrote {', '.join(sorted(p.name for p in out.iterdir()))} to {out}")


def _extender_args(pod: dict[str, Any]) -> bytes:
    """The filter body kube-scheduler sends for `pod` (as its informer holds it: without
    managedFields) at 1,000 nodes: the names its adaptive sampling sends, NodeNames last."""
    # (benchmarks/verbs.py, beside this script: its sampling is what kube-scheduler sends)
    from verbs import node_name, sampled  # noqa: PLC0415

    held = dict(pod)
    held["metadata"] = {k: v for k, v in pod["metadata"].items() if k != "managedFields"}
    names = [NODE] + [node_name(i) for i in range(sampled(SCHEDULER_NODES) - 1)]
    return _go_json({"Pod": held, "Nodes": None, "NodeNames": names})


def _go_json(value: Any) -> bytes:
    """As Go's encoder writes it: compact, UTF-8, fields in the order given."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# -- timing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decoder:
    """One way to decode a fixture; `same`: it reads what today's decode reads (checked)."""

    column: str
    decode: Callable[[bytes], Any]
    same: bool


@dataclass(frozen=True)
class Fixture:
    name: str
    kind: str  # one of WATCHED, or the verb: filter, bind
    data: bytes
    decoders: tuple[Decoder, ...]


def watch_decoders(kind: str) -> tuple[Decoder, ...]:
    model = KINDS[kind].model
    events = WatchEvent[model]  # type: ignore[valid-type]  # (as `Informer` makes it)
    struct = STRUCTS[kind]

    def today(line: bytes) -> Any:
        if BOOKMARK in line[:32]:  # (the informer's test, before decoding)
            raise ValueError("a bookmark")
        return events.model_validate_json(line)

    lean = lean_event(struct)
    event: Any = Event[struct]  # type: ignore[valid-type]
    return (
        Decoder("today", today, True),
        Decoder("json+mv", lambda line: events.model_validate(json.loads(line)), True),
        Decoder("orjson+mv", lambda line: events.model_validate(orjson.loads(line)), True),
        Decoder("lean", lean.model_validate_json, False),
        Decoder("msgspec", struct_decoder(event), True),
        Decoder("msgspec-q", struct_decoder(event, quantities=False), False),
        Decoder("json", json.loads, False),
        Decoder("orjson", orjson.loads, False),
    )


def filter_decoders(body: bytes) -> tuple[Decoder, ...]:
    """The filter body's decoders; today's as served finds the pod in a cache that holds it."""
    state = ClusterState()
    args, _ = CandidateParser().parse(body)
    state.upsert_pod(args.pod)
    served = CandidateParser(known=state.known_pod)
    return (
        Decoder("today", served.parse, True),
        # (a parser of its own per call: its cache of parsed pods must not hold this one)
        Decoder("cold", lambda data: CandidateParser().parse(data), True),
        Decoder("pydantic", ExtenderArgs.model_validate_json, True),
        Decoder("lean", lean_model(ArgsStruct).model_validate_json, False),
        Decoder("msgspec", struct_decoder(ArgsStruct), True),
        Decoder("msgspec-q", struct_decoder(ArgsStruct, quantities=False), False),
        Decoder("json", json.loads, False),
        Decoder("orjson", orjson.loads, False),
    )


def bind_decoders() -> tuple[Decoder, ...]:
    return (
        Decoder("today", ExtenderBindingArgs.model_validate_json, True),
        Decoder("lean", lean_model(BindingStruct).model_validate_json, False),
        Decoder("msgspec", struct_decoder(BindingStruct), True),
        Decoder("json", json.loads, False),
        Decoder("orjson", orjson.loads, False),
    )


def load(folder: Path = FIXTURES) -> list[Fixture]:
    """Every fixture in `folder`, each line of a watch fixture one, named for what it shows."""
    fixtures: list[Fixture] = []
    for kind in WATCHED:
        decoders = watch_decoders(kind)
        for line in (folder / f"{kind}.jsonl").read_bytes().splitlines():
            name = describe(kind, json.loads(line))
            seen = sum(1 for f in fixtures if f.name.startswith(name))
            named = f"{name} #{seen + 1}" if seen else name
            fixtures.append(Fixture(named, kind, line, decoders))
    body = (folder / "extender-args.json").read_bytes()
    fixtures.append(Fixture("filter: ExtenderArgs", "filter", body, filter_decoders(body)))
    binding = (folder / "binding-args.json").read_bytes()
    fixtures.append(Fixture("bind: ExtenderBindingArgs", "bind", binding, bind_decoders()))
    return fixtures


def describe(kind: str, event: dict[str, Any]) -> str:
    """`pod MODIFIED (bound)`: the kind, the event and what the object shows."""
    found = event["object"]
    spec, status = found.get("spec") or {}, found.get("status") or {}
    if kind == "pod":
        shown = (
            "gated"
            if spec.get("schedulingGates")
            else "running"
            if status.get("phase") == "Running"
            else "bound"
            if spec.get("nodeName")
            else "gate lifted"
        )
    elif kind == "node":
        shown = "status" if status.get("conditions") else "new"
    else:
        shown = status.get("phase") or status.get("state") or "new"
    return f"{kind} {event['type']} ({shown})"


def check(fixture: Fixture) -> list[str]:
    """Whether each decoder marked `same` reads what today's decode reads: today's models must
    come out equal, the Structs must read the same field by field."""
    problems: list[str] = []
    today = _model_of(fixture.decoders[0].decode(fixture.data))
    for decoder in fixture.decoders[1:]:
        if not decoder.same:
            continue
        read = decoder.decode(fixture.data)
        if isinstance(read, msgspec.Struct):
            differ = differences(today, read)
        else:
            differ = [] if _model_of(read) == today else ["today's models come out different"]
        problems += [f"{fixture.name}, {decoder.column}: {d}" for d in differ]
    return problems


def _model_of(decoded: Any) -> Any:
    """A filter's parse gives (ExtenderArgs, Candidates): the arguments with the names read."""
    if isinstance(decoded, tuple):
        args, candidates = decoded
        return ExtenderArgs.model_construct(pod=args.pod, node_names=candidates.names)
    return decoded


def best_us(decode: Callable[[bytes], Any], data: bytes, number: int, repeat: int) -> float:
    """Microseconds per decode, the best of `repeat` rounds of `number` decodes."""
    rounds = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            decode(data)
        rounds.append(time.perf_counter() - started)
    return min(rounds) / number * 1e6


# -- report -------------------------------------------------------------------------------------


def measure(fixtures: Sequence[Fixture], number: int, repeat: int) -> dict[str, dict[str, float]]:
    return {
        f.name: {d.column: best_us(d.decode, f.data, number, repeat) for d in f.decoders}
        for f in fixtures
    }


def report(fixtures: Sequence[Fixture], timings: dict[str, dict[str, float]], command: str) -> None:
    print(f"$ {command}")
    watched = [f for f in fixtures if f.kind in WATCHED]
    verbs = [f for f in fixtures if f.kind not in WATCHED]
    for title, chosen in (("watch events", watched), ("verb bodies", verbs)):
        print(f"\n{title}: µs per decode (today/msgspec: how many times faster msgspec is)")
        for group in _same_decoders(chosen):
            columns = _columns(group[0])
            header = ["fixture", "bytes", *columns, "today/msgspec"]
            print("| " + " | ".join(header) + " |")
            print("|" + "|".join("---" for _ in header) + "|")
            for fixture in group:
                row = timings[fixture.name]
                cells = [fixture.name, str(len(fixture.data))]
                cells += [f"{row[c]:.1f}" for c in columns]
                cells.append(f"{row['today'] / row['msgspec']:.1f}x")
                print("| " + " | ".join(cells) + " |")
    bound_pod(fixtures, timings)


def _same_decoders(fixtures: Sequence[Fixture]) -> list[list[Fixture]]:
    """Runs of fixtures decoded the same ways, one table each."""
    groups: list[list[Fixture]] = []
    for fixture in fixtures:
        if groups and _columns(groups[-1][0]) == _columns(fixture):
            groups[-1].append(fixture)
        else:
            groups.append([fixture])
    return groups


def _columns(fixture: Fixture) -> list[str]:
    return [d.column for d in fixture.decoders]


def bound_pod(fixtures: Sequence[Fixture], timings: dict[str, dict[str, float]]) -> None:
    """What a bound pod's decoding costs: its watch events and its filter and bind bodies,
    today, with msgspec for each, and with the fastest decoder that reads the same for each."""
    counted = [f for f in fixtures if f.kind in ("pod", "filter", "bind")]
    events = [f for f in counted if f.kind == "pod"]
    best = {
        f.name: min((d.column for d in f.decoders if d.same), key=timings[f.name].__getitem__)
        for f in counted
    }
    totals = {
        "today": sum(timings[f.name]["today"] for f in counted),
        "msgspec for each": sum(timings[f.name]["msgspec"] for f in counted),
        "the fastest that reads the same": sum(timings[f.name][best[f.name]] for f in counted),
    }
    print(f"\na bound pod: its {len(events)} watch events, its filter body and its bind body")
    print("| decoding | µs per bound pod (ms per 1,000) | saved |")
    print("|---|---|---|")
    for way, total in totals.items():
        saved = totals["today"] - total
        print(f"| {way} | {total:.0f} | {f'{saved:.0f} µs' if saved else ''} |")
    print("the fastest: " + ", ".join(f"{name}: {column}" for name, column in best.items()))
    gated = next((f for f in events if f.name.endswith("(gated)")), None)
    if gated is not None:
        ungated = {
            way: total - timings[gated.name]["today" if way == "today" else best[gated.name]]
            for way, total in totals.items()
            if way != "msgspec for each"
        }
        print(
            f"a pod made ungated (a Job whose pods all come once its gang is admitted) has no "
            f"gated event: {ungated['today']:.0f} µs today, "
            f"{ungated['the fastest that reads the same']:.0f} µs with the fastest"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=100, help="decodes per round")
    parser.add_argument("--repeat", type=int, default=50, help="rounds; the best is printed")
    parser.add_argument("--capture", action="store_true", help="record the fixtures anew")
    args = parser.parse_args(argv)
    if args.capture:
        capture(FIXTURES)
        return
    fixtures = load()
    problems = [problem for fixture in fixtures for problem in check(fixture)]
    if problems:
        raise SystemExit("decoders that do not read what today's do:\n" + "\n".join(problems))
    timings = measure(fixtures, args.number, args.repeat)
    command = shlex.join(["python", "benchmarks/decode.py", *sys.argv[1:]])
    report(fixtures, timings, command)


if __name__ == "__main__":
    main()
