"""Lahar's Volcano CRDs, generated from the models: `manifests/crds/crd-batch.yaml` (Job),
`crd-scheduling.yaml` (PodGroup, Queue), `crd-bus.yaml` (Command) and `crd-topology.yaml`
(HyperNode). `lahar crds --write` writes them, `lahar crds --check` says which differ, and
`tests/unit/api/test_crds.py` fails while the committed files are not what the models make.

The API server prunes what a CRD's schema does not list, so a field missing here would be dropped
from every object in silence. Each schema is walked from the model that reads the object (`Job`,
`PodGroup`, `Queue`, `Command`, `HyperNode`): a field's Python type gives its schema type, its
`Crd` marker (`api.schema`) what Python cannot say (int32, a default, an enum, an embedded
Kubernetes type kept whole, a length, a pattern, a CEL rule), `Field(ge=...)` its minimum, a field
without a default is required, and the docstring under it its description. The rest of each CRD
(names, short names, scope, printer columns, subresources) is Volcano's, in `DEFINITIONS`, with two
departures said there: the PodGroup has a status subresource (Lahar's extender writes status
through it) and the Queue's printer columns add weight, state and age to Volcano's parent.

Validation beyond types, enums and bounds (name patterns and lengths, a policy's events) is left to
the admission webhook, which words it better and reports every problem at once; the HyperNode CRD
alone carries Volcano's patterns, lengths and CEL rules too, as Volcano's does, since Lahar's
webhook sees a HyperNode only where it is installed and the scheduler reads HyperNodes either way.
Pure but for reading the models' own source for their docstrings.

The same concept one layer up: `kube.crds`, which waits until the CRDs applied to a cluster are
Established, serving their kinds.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import sys
import textwrap
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION, Command, Job
from extender.api.resources import Resources
from extender.api.scheduling import API_VERSION as SCHEDULING_API_VERSION
from extender.api.scheduling import PodGroup, Queue
from extender.api.schema import UNSET, Crd
from extender.api.topology import API_VERSION as TOPOLOGY_API_VERSION
from extender.api.topology import HyperNode

# Kubernetes' quantity, as every ResourceList in Volcano's CRDs is checked.
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
ROOT_FIELDS = ("api_version", "kind", "metadata")  # every object's, the same in every CRD


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    path: str
    priority: int = 0

    def wire(self) -> dict[str, Any]:
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.path}
        if self.priority:
            column["priority"] = self.priority
        return column


AGE = Column("AGE", "date", ".metadata.creationTimestamp")


@dataclass(frozen=True)
class Definition:
    """One CRD: the model its schema is walked from, and the rest as Volcano has it."""

    model: type[BaseModel]
    api_version: str  # group/version
    kind: str
    plural: str
    short_names: tuple[str, ...]
    description: str
    namespaced: bool = True
    status: bool = True  # a status subresource
    columns: tuple[Column, ...] = ()

    @property
    def group(self) -> str:
        return self.api_version.split("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.split("/")[1]

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


JOB = Definition(
    Job,
    BATCH_API_VERSION,
    "Job",
    "jobs",
    ("vcjob", "vj"),
    "A batch job of one or more tasks, each a set of identical pods, run as a gang.",
    columns=(
        Column("STATUS", "string", ".status.state.phase"),
        Column("minAvailable", "integer", ".status.minAvailable"),
        Column("RUNNINGS", "integer", ".status.running"),
        AGE,
        Column("QUEUE", "string", ".spec.queue", priority=1),
    ),
)
POD_GROUP = Definition(
    PodGroup,
    SCHEDULING_API_VERSION,
    "PodGroup",
    "podgroups",
    ("pg", "podgroup-v1beta1"),
    "A group of pods scheduled all or nothing (a gang).",
    # Volcano's has no status subresource (its scheduler replaces whole PodGroups); Lahar's
    # extender writes the status through it, and nothing else does.
    columns=(
        Column("STATUS", "string", ".status.phase"),
        Column("minMember", "integer", ".spec.minMember"),
        Column("RUNNINGS", "integer", ".status.running"),
        AGE,
        Column("QUEUE", "string", ".spec.queue", priority=1),
    ),
)
QUEUE = Definition(
    Queue,
    SCHEDULING_API_VERSION,
    "Queue",
    "queues",
    ("q", "queue-v1beta1"),
    "A share of the cluster that PodGroups are scheduled from.",
    namespaced=False,
    # Volcano's shows the parent only; Lahar's weight, state and age too.
    columns=(
        Column("PARENT", "string", ".spec.parent"),
        Column("WEIGHT", "integer", ".spec.weight"),
        Column("STATE", "string", ".status.state"),
        AGE,
    ),
)
COMMAND = Definition(
    Command,
    BUS_API_VERSION,
    "Command",
    "commands",
    (),
    "A request for one action on one object (a Job).",
    status=False,
    # Volcano's has no printer columns.
    columns=(
        Column("ACTION", "string", ".action"),
        Column("TARGET", "string", ".target.name"),
        AGE,
    ),
)

HYPER_NODE = Definition(
    HyperNode,
    TOPOLOGY_API_VERSION,
    "HyperNode",
    "hypernodes",
    ("hn",),
    "A group of nodes close in the network (under one switch, one spine): its tier says how "
    "close, its members are nodes or HyperNodes of lower tiers.",
    namespaced=False,
    columns=(
        Column("Tier", "string", ".spec.tier"),
        Column("TierName", "string", ".spec.tierName"),
        Column("NodeCount", "integer", ".status.nodeCount"),
        Column("Age", "date", ".metadata.creationTimestamp"),
    ),
)


@dataclass(frozen=True)
class CrdFile:
    name: str  # under manifests/crds/
    header: str  # said in comments at its top
    definitions: tuple[Definition, ...]


_GENERATED = (
    "Generated from Lahar's models (extender/api/) by `lahar crds --write`: "
    "edit the models, not this file (`lahar crds --check` and the unit tests say when it differs)."
)
FILES = (
    CrdFile(
        "crd-batch.yaml",
        "Volcano's batch API (batch.volcano.sh/v1alpha1): the Job, served as Volcano serves it, so "
        "Volcano Job manifests apply unchanged. Lahar's controller turns a Job into a PodGroup and "
        "its pods; the schema checks types and bounds, and the admission webhook checks the rules "
        "(task names, policies, partitions) and fills in defaults (minAvailable, task names). Pod "
        "templates and claim specs are kept as written: Kubernetes validates them when the "
        "controller creates the pods and claims.",
        (JOB,),
    ),
    CrdFile(
        "crd-scheduling.yaml",
        "Volcano's scheduling API (scheduling.volcano.sh/v1beta1): PodGroup and Queue, served as "
        "Volcano serves them, so Volcano Jobs, Kubeflow's training-operator and the Spark operator "
        "work unchanged. Lahar watches both; pods join a PodGroup by the annotation "
        "scheduling.k8s.io/group-name.",
        (POD_GROUP, QUEUE),
    ),
    CrdFile(
        "crd-bus.yaml",
        "Volcano's command bus (bus.volcano.sh/v1alpha1): a Command asks the Job controller for "
        "one action on one Job (AbortJob, ResumeJob, RestartJob, TerminateJob, CompleteJob), as "
        "`vcctl job suspend` and `vcctl job resume` create them. The controller performs it once "
        "and deletes the Command.",
        (COMMAND,),
    ),
    CrdFile(
        "crd-topology.yaml",
        "Volcano's network topology API (topology.volcano.sh/v1alpha1): the cluster-scoped "
        "HyperNode, served as Volcano serves it, so HyperNodes written for Volcano (by hand or by "
        "its network topology discovery) apply unchanged. Lahar's scheduler reads them to keep a "
        "Job's or PodGroup's pods within one HyperNode of the tier its networkTopology allows, "
        "and each partition within one HyperNode. The schema carries Volcano's checks (one "
        "selector per member, names, patterns); the admission webhook words them and compiles "
        "each pattern.",
        (HYPER_NODE,),
    ),
)
DEFINITIONS = tuple(d for f in FILES for d in f.definitions)


def custom_resource_definition(definition: Definition) -> dict[str, Any]:
    version: dict[str, Any] = {"name": definition.version, "served": True, "storage": True}
    if definition.status:
        version["subresources"] = {"status": {}}
    if definition.columns:
        version["additionalPrinterColumns"] = [c.wire() for c in definition.columns]
    version["schema"] = {"openAPIV3Schema": object_schema(definition)}
    names: dict[str, Any] = {
        "kind": definition.kind,
        "listKind": f"{definition.kind}List",
        "plural": definition.plural,
        "singular": definition.kind.lower(),
    }
    if definition.short_names:
        names["shortNames"] = list(definition.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": definition.name},
        "spec": {
            "group": definition.group,
            "scope": "Namespaced" if definition.namespaced else "Cluster",
            "names": names,
            "versions": [version],
        },
    }


def object_schema(definition: Definition) -> dict[str, Any]:
    """The openAPIV3Schema of the definition's objects."""
    model = definition.model
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
    }
    fields = {n: f for n, f in model.model_fields.items() if n not in ROOT_FIELDS}
    body = _model_schema(model, fields)
    properties.update(body.pop("properties", {}))
    return {
        "type": "object",
        "description": definition.description,
        **body,
        "properties": properties,
    }


# -- the walk -------------------------------------------------------------------------------------


@dataclass
class _Marks:
    """What the metadata of a field and of its type say beyond the Python type."""

    format: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    enum: tuple[str, ...] | None = None
    default: Any = UNSET
    required: bool = False
    nullable: bool = False
    opaque: bool = False
    map_type: str | None = None
    list_type: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    validations: tuple[tuple[str, str], ...] | None = None

    def add(self, item: Any) -> None:
        if isinstance(item, Crd):
            for name in self.__dataclass_fields__:
                value = getattr(item, name)
                if not (value is None or value is False or value is UNSET):  # (0 is a value)
                    setattr(self, name, value)
        elif isinstance(item, annotated_types.Ge):
            self.minimum = int(item.ge)  # type: ignore[call-overload]
        elif isinstance(item, annotated_types.Gt):
            self.minimum = int(item.gt) + 1  # type: ignore[call-overload]
        elif isinstance(item, annotated_types.Le):
            self.maximum = int(item.le)  # type: ignore[call-overload]
        elif isinstance(item, annotated_types.Lt):
            self.maximum = int(item.lt) - 1  # type: ignore[call-overload]


def _model_schema(model: type[BaseModel], fields: Mapping[str, FieldInfo]) -> dict[str, Any]:
    docs = _docstrings(model)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in fields.items():
        if info.exclude:
            continue  # Lahar's own, never on the wire
        wire = info.serialization_alias or info.alias or name
        marks = _Marks()
        for item in info.metadata:
            marks.add(item)
        schema = _schema(info.annotation, marks, info.description or docs.get(name))
        properties[wire] = schema
        if info.is_required() or marks.required:
            required.append(wire)
    body: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        body["required"] = required
    return body


def _schema(annotation: Any, marks: _Marks, description: str | None = None) -> dict[str, Any]:
    """The schema of a value of type `annotation`: its type and marks, then its parts."""
    annotation, _ = _unwrap(annotation, marks)  # an optional field may be absent; null is no value
    head, parts = _type(annotation, marks)
    schema: dict[str, Any] = dict(head)
    if marks.format:
        schema["format"] = marks.format
    if marks.enum is not None:
        schema["enum"] = [str(value) for value in marks.enum]
    for key, value in _bounds(marks):
        schema[key] = value
    if marks.default is not UNSET:
        schema["default"] = marks.default
    if marks.nullable:
        schema["nullable"] = True
    if description:
        schema["description"] = description
    schema.update(parts)
    if marks.map_type:
        schema["x-kubernetes-map-type"] = marks.map_type
    if marks.list_type:
        schema["x-kubernetes-list-type"] = marks.list_type
    if marks.validations:
        schema["x-kubernetes-validations"] = [
            {"rule": rule, "message": message} for rule, message in marks.validations
        ]
    return schema


def _bounds(marks: _Marks) -> Iterator[tuple[str, Any]]:
    """The bounds the marks set, by their schema keys."""
    for key, value in (
        ("minimum", marks.minimum),
        ("maximum", marks.maximum),
        ("minLength", marks.min_length),
        ("maxLength", marks.max_length),
        ("pattern", marks.pattern),
        ("minItems", marks.min_items),
    ):
        if value is not None:
            yield key, value


def _unwrap(annotation: Any, marks: _Marks) -> tuple[Any, bool]:
    """The type under Annotated (its metadata added to `marks`) and Optional (said as True)."""
    optional = False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *metadata = get_args(annotation)
            for item in metadata:
                marks.add(item)
        elif origin in (Union, types.UnionType):
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                raise TypeError(f"a CRD field cannot be one of several types: {annotation!r}")
            annotation, optional = options[0], True
        else:
            return annotation, optional


_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _type(annotation: Any, marks: _Marks) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema's type (and enum) first, its parts (properties, items, values) after."""
    if marks.opaque:
        return {"type": "object"}, {"x-kubernetes-preserve-unknown-fields": True}
    if annotation is Resources:  # a ResourceList: quantities by resource name
        return {"type": "object"}, {"additionalProperties": _quantity()}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}, {}
    enum = _enum(annotation)
    if enum is not None:
        return {"type": "string", "enum": enum}, {}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        body = _model_schema(annotation, annotation.model_fields)
        return {"type": body.pop("type")}, body
    return _collection(annotation)


def _enum(annotation: Any) -> list[str] | None:
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"only string literals make a CRD enum: {annotation!r}")
        return list(values)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(m.value) for m in annotation]
    return None


def _collection(annotation: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    origin = get_origin(annotation)
    if origin in (list, tuple, Sequence):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return {"type": "array"}, {"items": _element(args[0])}
    if origin in (dict, Mapping):
        key, value = get_args(annotation)
        if key is not str:
            raise TypeError(f"a CRD map has string keys: {annotation!r}")
        if value is Any:
            raise TypeError(f"{annotation!r}: mark an embedded Kubernetes type Opaque, or model it")
        return {"type": "object"}, {"additionalProperties": _element(value)}
    raise TypeError(f"no CRD schema for {annotation!r}")


def _element(annotation: Any) -> dict[str, Any]:
    """An item of a list or a value of a map: null there is a value (`ssh: ~` names a plugin)."""
    marks = _Marks()
    annotation, optional = _unwrap(annotation, marks)
    if optional:
        marks.nullable = True
    return _schema(annotation, marks)


def _quantity() -> dict[str, Any]:
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY,
        "x-kubernetes-int-or-string": True,
    }


# -- descriptions from the models' docstrings -----------------------------------------------------


@functools.cache
def _docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of the model and of the models it inherits from."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            found.update(_class_docstrings(cls))
    return found


def _class_docstrings(cls: type) -> dict[str, str]:
    tree = _module_tree(cls.__module__)
    node = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__qualname__), None
    )
    if node is None:
        return {}
    return dict(_field_docs(node.body))


def _field_docs(body: Sequence[ast.stmt]) -> Iterator[tuple[str, str]]:
    for statement, following in itertools.pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            yield statement.target.id, " ".join(inspect.cleandoc(following.value.value).split())


@functools.cache
def _module_tree(module: str) -> ast.Module:
    return ast.parse(inspect.getsource(sys.modules[module]))


# -- YAML -----------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block style, lists indented under their key, no anchors (every schema written out)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def render(crd_file: CrdFile) -> str:
    """The file's text: its header as comments, then each CRD."""
    wrap = functools.partial(textwrap.wrap, width=98, break_on_hyphens=False)
    lines = [*(f"# {line}" for line in wrap(crd_file.header)), "#"]
    lines += [f"# {line}" for line in wrap(_GENERATED)]
    documents = [
        yaml.dump(
            custom_resource_definition(definition),
            Dumper=_Dumper,
            sort_keys=False,
            width=100,
            allow_unicode=True,
        )
        for definition in crd_file.definitions
    ]
    return "\n".join(lines) + "\n" + "---\n".join(documents)


def rendered() -> dict[str, str]:
    """Each CRD file's text by its name under `manifests/base/`."""
    return {crd_file.name: render(crd_file) for crd_file in FILES}
