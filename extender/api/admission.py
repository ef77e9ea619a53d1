"""AdmissionReview (`admission.k8s.io/v1`) as the API server sends it to a webhook and reads back.

Only v1 is spoken (the webhook configurations ask for it). `AdmissionRequest` keeps `object` and
`oldObject` as plain mappings: the admission rules parse them into Lahar's models themselves, so a
malformed object is a denial naming its field, while a malformed envelope (no uid, an unknown
operation) is a `ValidationError` the HTTP adapter answers with 400.
"""

from __future__ import annotations

import base64
import json
from enum import StrEnum
from typing import Any

from pydantic import Field

from extender.api.model import KubeModel

ADMISSION_API_VERSION = "admission.k8s.io/v1"


class Operation(StrEnum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"


class GroupVersionResource(KubeModel):
    group: str = ""
    version: str = ""
    resource: str = ""


class GroupVersionKind(KubeModel):
    group: str = ""
    version: str = ""
    kind: str = ""


class AdmissionRequest(KubeModel):
    uid: str = Field(min_length=1, max_length=128)
    kind: GroupVersionKind
    resource: GroupVersionResource
    sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: Operation
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False


class AdmissionReview(KubeModel):
    api_version: str = Field(pattern=r"^admission\.k8s\.io/v1$")
    kind: str = Field(pattern=r"^AdmissionReview$")
    request: AdmissionRequest


def response(
    uid: str,
    *,
    denial: str | None = None,
    patch: list[dict[str, Any]] | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """The AdmissionReview that answers request `uid`: allowed, with an optional JSONPatch, or
    denied with `denial` as the message the user reads (HTTP-style code 422, reason Invalid)."""
    answer: dict[str, Any] = {"uid": uid, "allowed": denial is None}
    if denial is not None:
        answer["status"] = {"code": 422, "reason": "Invalid", "message": denial}
    elif patch:
        encoded = json.dumps(patch, separators=(",", ":")).encode()
        answer["patchType"] = "JSONPatch"
        answer["patch"] = base64.b64encode(encoded).decode()
    if warnings:
        answer["warnings"] = warnings
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": answer}
