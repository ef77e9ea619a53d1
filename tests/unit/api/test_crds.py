"""The Volcano CRDs are generated from the models: the committed files are what the models make,
each field's schema says what its type and marker say, and the walk refuses a type it cannot
write (an unmarked `dict[str, Any]` would otherwise be a schema that prunes everything)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import yaml
from pydantic import Field

from extender.api.crds import (
    DEFINITIONS,
    FILES,
    CrdFile,
    custom_resource_definition,
    object_schema,
    render,
)
from extender.api.crds import Definition as CrdDefinition
from extender.api.model import KubeModel
from extender.api.objects import ResourceList
from extender.api.resources import EMPTY
from extender.api.schema import Crd, Int32, Opaque
from extender.cli.main import main

BASE = Path(__file__).resolve().parents[3] / "manifests" / "crds"


@pytest.mark.parametrize("crd_file", FILES, ids=lambda f: f.name)
def test_the_committed_crds_are_what_the_models_make(crd_file: CrdFile) -> None:
    assert (BASE / crd_file.name).read_text() == render(crd_file), (
        f"manifests/crds/{crd_file.name} differs from the models: run `lahar crds --write`"
    )


def test_lahar_crds_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--check", "--dir", str(tmp_path)]) == 1
    assert "is not what the models make" in capsys.readouterr().err

    assert main(["crds", "--write", "--dir", str(tmp_path)]) == 0
    assert main(["crds", "--check", "--dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in FILES)


def test_each_crd_is_named_and_served_as_volcanos() -> None:
    crds = {d.kind: custom_resource_definition(d) for d in DEFINITIONS}

    assert {kind: crd["metadata"]["name"] for kind, crd in crds.items()} == {
        "Job": "jobs.batch.volcano.sh",
        "PodGroup": "podgroups.scheduling.volcano.sh",
        "Queue": "queues.scheduling.volcano.sh",
        "Command": "commands.bus.volcano.sh",
        "HyperNode": "hypernodes.topology.volcano.sh",
    }
    assert crds["Job"]["spec"]["names"]["shortNames"] == ["vcjob", "vj"]
    assert crds["PodGroup"]["spec"]["names"]["shortNames"] == ["pg", "podgroup-v1beta1"]
    assert crds["Queue"]["spec"]["scope"] == "Cluster"
    assert "shortNames" not in crds["Command"]["spec"]["names"]
    (command,) = crds["Command"]["spec"]["versions"]
    assert "subresources" not in command
    hyper_node = crds["HyperNode"]["spec"]
    assert (hyper_node["scope"], hyper_node["names"]["shortNames"]) == ("Cluster", ["hn"])
    (version,) = hyper_node["versions"]
    assert version["name"] == "v1alpha1"
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Tier",
        "TierName",
        "NodeCount",
        "Age",
    ]


def test_the_hypernode_schema_checks_what_volcanos_does() -> None:
    """Volcano's CRD checks: a tier of 0 or more, at least one member of type Node or HyperNode,
    a DNS subdomain for an exact name, a pattern not empty, one selector per member."""
    schema = custom_resource_definition(next(d for d in DEFINITIONS if d.kind == "HyperNode"))
    spec = schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    fields, member = spec["properties"], spec["properties"]["members"]["items"]
    selector = member["properties"]["selector"]

    assert spec["required"] == ["tier"]
    assert fields["tier"]["minimum"] == 0
    assert fields["tierName"]["maxLength"] == 253
    assert fields["members"]["minItems"] == 1
    assert member["required"] == ["type"]
    assert member["properties"]["type"]["enum"] == ["Node", "HyperNode"]
    name = selector["properties"]["exactMatch"]["properties"]["name"]
    assert (name["minLength"], name["maxLength"]) == (1, 253)
    assert name["pattern"].startswith("^[a-z0-9]")
    assert selector["properties"]["regexMatch"]["properties"]["pattern"]["minLength"] == 1
    assert selector["properties"]["labelMatch"]["x-kubernetes-map-type"] == "atomic"
    rules = [v["rule"] for v in selector["x-kubernetes-validations"]]
    assert len(rules) == 2
    assert all(
        name in rule for rule in rules for name in ("exactMatch", "regexMatch", "labelMatch")
    )


SIZE = "The size."


class _Inner(KubeModel):
    size: Annotated[Int32, Crd(minimum=1)]
    """The size."""
    mode: Annotated[Literal["a", "b"], Crd(default="a")] = "a"


class _Sample(KubeModel):
    count: Int32 = 0
    """How many,
    over two lines."""
    template: Opaque = Field(default_factory=dict)
    resources: ResourceList = EMPTY
    plugins: dict[str, list[str] | None] = Field(default_factory=dict)
    inner: _Inner | None = None
    named: Annotated[str, Crd(required=True)] = ""
    phase: Annotated[str, Crd(enum=("Up", "Down"))] = ""
    label: Annotated[str, Crd(min_length=1, max_length=9, pattern="^[a-z]+$")] = ""
    items: Annotated[list[str], Crd(min_items=1, validations=(("size(self) < 3", "few"),))] = Field(
        default_factory=list
    )


def _sample_schema() -> dict[str, Any]:
    definition = CrdDefinition(_Sample, "example.com/v1", "Sample", "samples", (), "A sample.")
    return object_schema(definition)


def test_a_fields_type_marker_and_docstring_make_its_schema() -> None:
    schema = _sample_schema()
    fields = schema["properties"]

    assert list(fields)[:3] == ["apiVersion", "kind", "metadata"]
    assert fields["count"] == {
        "type": "integer",
        "format": "int32",
        "description": "How many, over two lines.",
    }
    assert fields["template"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert fields["resources"]["additionalProperties"]["x-kubernetes-int-or-string"] is True
    assert fields["plugins"]["additionalProperties"] == {
        "type": "array",
        "nullable": True,
        "items": {"type": "string"},
    }
    assert fields["inner"] == {
        "type": "object",
        "properties": {
            "size": {"type": "integer", "format": "int32", "minimum": 1, "description": SIZE},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
        },
        "required": ["size"],
    }
    assert fields["phase"] == {"type": "string", "enum": ["Up", "Down"]}
    assert fields["label"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 9,
        "pattern": "^[a-z]+$",
    }
    assert fields["items"] == {
        "type": "array",
        "minItems": 1,
        "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "size(self) < 3", "message": "few"}],
    }
    assert schema["required"] == ["named"]


@pytest.mark.parametrize("crd_file", FILES, ids=lambda f: f.name)
def test_every_schema_is_written_out(crd_file: CrdFile) -> None:
    """No YAML anchors (a reader sees each schema where it applies), and the text reads back as
    the definitions."""
    text = render(crd_file)
    assert "&id" not in text
    documents = list(yaml.safe_load_all(text))
    assert documents == [custom_resource_definition(d) for d in crd_file.definitions]


class _Untyped(KubeModel):
    anything: dict[str, Any] = Field(default_factory=dict)


def test_an_unmarked_mapping_of_anything_is_refused() -> None:
    definition = CrdDefinition(_Untyped, "example.com/v1", "Untyped", "untypeds", (), "")
    with pytest.raises(TypeError, match="Opaque"):
        object_schema(definition)
