"""The scheduler extender's wire types (`k8s.io/kube-scheduler/extender/v1`), as the stock
kube-scheduler sends and reads them.

The Go types carry no JSON tags, so the keys are the capitalised Go field names (`Pod`, `NodeNames`,
`FailedNodes`); embedded Pods and Nodes are ordinary camelCase Kubernetes JSON. Python attributes
are snake_case with the Go names as aliases. Requests are parsed strictly enough that a malformed
body is a `ValidationError` naming the field; replies are dumped with `dump()` (aliases, nulls where
the Go side expects them).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_pascal
from pydantic_core import to_json

from extender.api.objects import Pod


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_pascal, populate_by_name=True, extra="ignore")

    def dump(self) -> bytes:
        return self.model_dump_json(by_alias=True).encode()


class NodeList(BaseModel):
    """A v1 NodeList. Items stay raw JSON objects: the Nodes variant of a filter reply echoes the
    passing nodes back exactly as they came."""

    model_config = ConfigDict(extra="allow")

    items: list[dict[str, Any]] = []

    @field_validator("items")
    @classmethod
    def _named(cls, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, item in enumerate(items):
            metadata = item.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if not isinstance(name, str) or not name:
                raise ValueError(f"item {index}: metadata.name is missing or not a string")
        return items

    def names(self) -> list[str]:
        return [item["metadata"]["name"] for item in self.items]


class ExtenderArgs(WireModel):
    """The filter and prioritize request: the pod and the candidate nodes (full or by name)."""

    pod: Pod
    nodes: NodeList | None = None
    node_names: list[str] | None = None

    def candidate_names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        return self.nodes.names() if self.nodes is not None else []


class ExtenderFilterResult(WireModel):
    nodes: NodeList | None = None
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] = {}
    failed_and_unresolvable_nodes: dict[str, str] = {}
    error: str = ""


def all_passed_json(raw_names: bytes) -> bytes:
    """A filter reply in which every candidate passed, echoing the request's raw NodeNames array."""
    return (
        b'{"Nodes":null,"NodeNames":'
        + raw_names
        + b',"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}'
    )


class HostPriority(WireModel):
    host: str
    score: int


def host_priority_json(host: str, score: int) -> bytes:
    """One element of a prioritize reply, encoded: `{"Host":"n1","Score":7}`."""
    return b'{"Host":%s,"Score":%d}' % (to_json(host), score)


def host_priority_list_json(elements: list[bytes]) -> bytes:
    """A prioritize reply (a bare JSON array) from encoded elements."""
    return b"[" + b",".join(elements) + b"]"


class MetaPod(WireModel):
    uid: str = Field(alias="UID")


class MetaVictims(WireModel):
    pods: list[MetaPod] = []
    num_pdb_violations: int = Field(default=0, alias="NumPDBViolations")


class Victims(WireModel):
    pods: list[Pod] = []
    num_pdb_violations: int = Field(default=0, alias="NumPDBViolations")

    def meta(self) -> MetaVictims:
        return MetaVictims(
            pods=[MetaPod(uid=pod.metadata.uid) for pod in self.pods],
            num_pdb_violations=self.num_pdb_violations,
        )


class ExtenderPreemptionArgs(WireModel):
    pod: Pod
    node_name_to_victims: dict[str, Victims] | None = None
    node_name_to_meta_victims: dict[str, MetaVictims] | None = None

    def meta_victims(self) -> dict[str, MetaVictims]:
        """The candidates in the meta form, whichever form the scheduler sent."""
        if self.node_name_to_meta_victims is not None:
            return self.node_name_to_meta_victims
        return {node: v.meta() for node, v in (self.node_name_to_victims or {}).items()}


class ExtenderPreemptionResult(WireModel):
    node_name_to_meta_victims: dict[str, MetaVictims] = {}


class ExtenderBindingArgs(WireModel):
    pod_name: str = Field(min_length=1)
    pod_namespace: str = Field(min_length=1)
    pod_uid: str = Field(default="", alias="PodUID")
    node: str = Field(min_length=1)


class ExtenderBindingResult(WireModel):
    error: str = ""


def describe_invalid(error: ValidationError, root: str = "body") -> str:
    """A validation error as one line per problem: `Pod.spec.containers.0...: what is wrong`;
    a problem with the whole document is named `root`."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or root
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return "; ".join(problems)
