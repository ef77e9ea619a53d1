"""Reading Kubernetes manifests from files and applying them with server-side apply.

A manifest file may hold several YAML documents. Loading checks that each document names its
apiVersion, kind and metadata.name and fails with the file and document index otherwise, so a broken
manifest is reported before anything is sent. Applying uses the dynamic client, so CRDs, built-in
kinds and custom resources go through one path; `dry_run=True` asks the real API server to validate
and default an object (schemas, admission) without storing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError
from kubernetes.dynamic.resource import Resource

from extender.kube.client import KubeError, api_reason

MANIFEST_SUFFIXES = (".yaml", ".yml")
# kustomize's own files describe how to assemble manifests; they are not objects to apply.
NOT_OBJECTS = frozenset({"kustomization.yaml", "kustomization.yml"})


@dataclass(frozen=True)
class Manifest:
    """One object read from a file: `source` is "path#index" for messages."""

    source: str
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


def _manifest_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in MANIFEST_SUFFIXES and p.name not in NOT_OBJECTS
            )
        elif path.is_file():
            files.append(path)
        else:
            raise KubeError(f"manifest path {path} does not exist")
    return files


def _check(doc: object, source: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise KubeError(f"{source}: a manifest must be a mapping, got {type(doc).__name__}")
    for field in ("apiVersion", "kind"):
        if not isinstance(doc.get(field), str) or not doc[field]:
            raise KubeError(f"{source}: field {field} is missing or not a string")
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise KubeError(f"{source}: field metadata.name is missing or not a string")
    return doc


def load_manifests(*paths: Path) -> list[Manifest]:
    """Every object in the given files and folders (folders recursively, in path order)."""
    manifests: list[Manifest] = []
    for file in _manifest_files(paths):
        try:
            docs = list(yaml.safe_load_all(file.read_text()))
        except yaml.YAMLError as exc:
            raise KubeError(f"{file}: not valid YAML: {exc}") from exc
        for index, doc in enumerate(docs):
            if doc is None:  # an empty document between two '---'
                continue
            source = f"{file}#{index}"
            manifests.append(Manifest(source, _check(doc, source)))
    return manifests


_dynamic_clients: dict[int, DynamicClient] = {}


def _dynamic(api: k8s.ApiClient) -> DynamicClient:
    key = id(api)
    if key not in _dynamic_clients:
        _dynamic_clients[key] = DynamicClient(api)
    return _dynamic_clients[key]


def dynamic_resource(
    api: k8s.ApiClient, api_version: str, kind: str, *, what: str = ""
) -> tuple[Resource, DynamicClient]:
    """The dynamic client's resource for `api_version`/`kind`, rediscovering once if unknown."""
    dynamic = _dynamic(api)
    try:
        return dynamic.resources.get(api_version=api_version, kind=kind), dynamic
    except ResourceNotFoundError:
        # A kind whose CRD was created a moment ago is missing from the cached discovery.
        dynamic.resources.invalidate_cache()
    try:
        return dynamic.resources.get(api_version=api_version, kind=kind), dynamic
    except ResourceNotFoundError as exc:
        prefix = f"{what}: " if what else ""
        raise KubeError(f"{prefix}the server has no kind {api_version}/{kind}") from exc


def apply_object(
    api: k8s.ApiClient,
    body: Mapping[str, Any],
    *,
    dry_run: bool = False,
    field_manager: str = "lahar",
    source: str = "",
) -> dict[str, Any]:
    """Server-side apply `body`; return the object as the server stored (or would store) it."""
    kind, name = body["kind"], body["metadata"]["name"]
    what = f"{source + ': ' if source else ''}{kind} {name}"
    resource, dynamic = dynamic_resource(api, body["apiVersion"], kind, what=what)
    namespace = body["metadata"].get("namespace") or ("default" if resource.namespaced else None)
    try:
        result = dynamic.server_side_apply(
            resource,
            body=dict(body),
            name=name,
            namespace=namespace,
            field_manager=field_manager,
            force_conflicts=True,
            dry_run="All" if dry_run else None,
        )
    except k8s.ApiException as exc:
        raise KubeError(f"{what}: rejected by the API server: {api_reason(exc)}") from exc
    stored: dict[str, Any] = result.to_dict()
    return stored
