"""Volcano's CRD fields as a list of paths and types, for the drift test
(`tests/unit/api/test_volcano_drift.py`) to hold Lahar's generated CRDs against.

    python tests/data/volcano_fields.py VOLCANO_REPO > tests/data/volcano-crd-fields.txt

reads `config/crd/volcano/bases/` at the repository's HEAD (a bare mirror is enough: `git show`)
and writes one line per field, `<crd> <path> <type> [<limit>...]`: `spec.tasks[].replicas` is a
field of each item of a list, `spec.minResources{}` a value of a map; the type is the schema's
(`integer/int32` with its format, `int-or-string` for a quantity); the limits are what the API
server enforces on the value: `required`, `enum=a|b`, `minimum=N`, `maximum=N`, `minLength=N`,
`maxLength=N`, `minItems=N`, `pattern=P` and `rules=N` (how many CEL rules,
x-kubernetes-validations, the value is held to; their text differs from Lahar's words).
The subtrees that are embedded core Kubernetes types (a pod template, a claim spec, a label
selector) are listed as their root only: Lahar keeps them whole
(`x-kubernetes-preserve-unknown-fields`) and Kubernetes validates them when the objects are made.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

CRDS = {
    "jobs.batch.volcano.sh": "batch.volcano.sh_jobs.yaml",
    "podgroups.scheduling.volcano.sh": "scheduling.volcano.sh_podgroups.yaml",
    "queues.scheduling.volcano.sh": "scheduling.volcano.sh_queues.yaml",
    "commands.bus.volcano.sh": "bus.volcano.sh_commands.yaml",
    "hypernodes.topology.volcano.sh": "topology.volcano.sh_hypernodes.yaml",
}
FOLDER = "config/crd/volcano/bases"
LISTING = "tests/data/volcano-crd-fields.txt"
# Embedded core Kubernetes types, kept whole by Lahar: listed by their root only.
OPAQUE = {
    "jobs.batch.volcano.sh": ("spec.tasks[].template", "spec.volumes[].volumeClaim"),
    "podgroups.scheduling.volcano.sh": ("spec.subGroupPolicy[].labelSelector",),
}


def schema_type(schema: Mapping[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    kind = str(schema.get("type", "any"))
    return f"{kind}/{schema['format']}" if "format" in schema else kind


def limits(schema: Mapping[str, Any], required: bool) -> frozenset[str]:
    """What the API server refuses a value for, beyond its type."""
    found = {"required"} if required else set()
    if "enum" in schema:
        found.add("enum=" + "|".join(sorted(str(v) for v in schema["enum"])))
    bounds = ("minimum", "maximum", "minLength", "maxLength", "minItems", "pattern")
    found |= {f"{key}={schema[key]}" for key in bounds if key in schema}
    if schema.get("x-kubernetes-validations"):
        found.add(f"rules={len(schema['x-kubernetes-validations'])}")
    return frozenset(found)


def field_types(
    schema: Mapping[str, Any], opaque: tuple[str, ...] = (), path: str = ""
) -> Iterator[tuple[str, str, frozenset[str]]]:
    """Each field under `schema` with its type and limits, by path; `opaque` paths are not walked
    into."""
    required = set(schema.get("required") or ())
    for name, child in (schema.get("properties") or {}).items():
        yield from _field(child, opaque, f"{path}.{name}" if path else name, name in required)


def _field(
    schema: Mapping[str, Any], opaque: tuple[str, ...], path: str, required: bool = False
) -> Iterator[tuple[str, str, frozenset[str]]]:
    yield path, schema_type(schema), limits(schema, required)
    if path in opaque:
        return
    yield from field_types(schema, opaque, path)
    if isinstance(schema.get("items"), Mapping):
        yield from _field(schema["items"], opaque, f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _field(schema["additionalProperties"], opaque, f"{path}{{}}")


@dataclass(frozen=True)
class Field:
    kind: str
    limits: frozenset[str]


def crd_fields(crd: Mapping[str, Any]) -> dict[str, Field]:
    """A CRD's fields (of its first version) by path."""
    name = crd["metadata"]["name"]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return {
        path: Field(kind, found) for path, kind, found in field_types(schema, OPAQUE.get(name, ()))
    }


def read_listing(text: str) -> dict[str, dict[str, Field]]:
    """A listing this script wrote, by CRD, then path."""
    found: dict[str, dict[str, Field]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            crd, path, kind, *limited = line.split()
            found.setdefault(crd, {})[path] = Field(kind, frozenset(limited))
    return found


def _git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def main(repo: str) -> None:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    date = _git(repo, "show", "-s", "--format=%cI", "HEAD").strip()
    print(f"# Volcano's CRD fields at volcano-sh/volcano {commit} ({date}), {FOLDER}/.")
    print(f"# Made by: python tests/data/volcano_fields.py VOLCANO_REPO > {LISTING}")
    print("# <crd> <path> <type> [<limit>...]; embedded core Kubernetes types by their root only:")
    for crd, paths in OPAQUE.items():
        print(f"#   {crd}: {', '.join(paths)}")
    for crd, file in CRDS.items():
        document = yaml.safe_load(_git(repo, "show", f"HEAD:{FOLDER}/{file}"))
        for path, field in crd_fields(document).items():
            print(" ".join([crd, path, field.kind, *sorted(field.limits)]))


if __name__ == "__main__":
    main(sys.argv[1])
