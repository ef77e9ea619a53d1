"""AdmissionReview on the wire: the request as the API server sends it (a bad envelope is a
ValidationError), and the response that answers it."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pydantic import ValidationError

from extender.api.admission import (
    ADMISSION_API_VERSION,
    AdmissionReview,
    Operation,
    response,
)
from tests.builders import make_job, make_queue, make_review, set_path

UID = "0f6c3b9e-review"


def test_a_review_parses_with_objects_kept_as_mappings() -> None:
    body = make_job("tf").ns("ml").task("w").build()
    review = AdmissionReview.model_validate(make_review(body).update(body).dry_run().build())
    request = review.request
    assert (request.uid, request.name, request.namespace) == (UID, "tf", "ml")
    assert request.operation is Operation.UPDATE
    assert (request.resource.group, request.resource.resource) == ("batch.volcano.sh", "jobs")
    assert request.kind.kind == "Job"
    assert request.object == body
    assert request.old_object == body
    assert request.dry_run is True
    assert request.sub_resource == ""


def test_a_delete_carries_no_object() -> None:
    review = AdmissionReview.model_validate(make_review(make_queue("q").build()).delete().build())
    assert review.request.operation is Operation.DELETE
    assert review.request.object is None
    assert review.request.old_object is not None


def test_a_malformed_object_is_not_the_envelopes_problem() -> None:
    body = make_job("tf").task("w").set("spec.tasks[0].replicas", "two").build()
    review = AdmissionReview.model_validate(make_review(body).build())
    assert review.request.object is not None
    assert review.request.object["spec"]["tasks"][0]["replicas"] == "two"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("apiVersion", "admission.k8s.io/v1beta1"),
        ("apiVersion", "admission.k8s.io/v1x"),
        ("kind", "AdmissionReviewX"),
        ("request.uid", ""),
        ("request.uid", "u" * 129),
        ("request.operation", "PATCH"),
        ("request.object", "a job"),
        ("request", None),
    ],
    ids=[
        "v1beta1",
        "api-version-suffix",
        "kind",
        "empty-uid",
        "long-uid",
        "unknown-operation",
        "object-not-mapping",
        "no-request",
    ],
)
def test_a_malformed_envelope_is_a_validation_error(path: str, value: Any) -> None:
    review = make_review(make_job("tf").task("w").build()).build()
    set_path(review, path, value)
    with pytest.raises(ValidationError):
        AdmissionReview.model_validate(review)


def test_a_review_without_request_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        AdmissionReview.model_validate(
            {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview"}
        )


def test_allowed_response() -> None:
    assert response(UID) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": UID, "allowed": True},
    }


def test_allowed_response_with_patch_and_warnings() -> None:
    patch = [{"op": "add", "path": "/spec/queue", "value": "default"}]
    answer = response(UID, patch=patch, warnings=["careful"])["response"]
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(answer["patch"])) == patch
    assert answer["warnings"] == ["careful"]


def test_an_empty_patch_is_not_sent() -> None:
    answer = response(UID, patch=[])["response"]
    assert "patch" not in answer
    assert "patchType" not in answer


def test_denied_response() -> None:
    answer = response(UID, denial="Job ml/tf is invalid: spec.tasks: required")["response"]
    assert answer == {
        "uid": UID,
        "allowed": False,
        "status": {
            "code": 422,
            "reason": "Invalid",
            "message": "Job ml/tf is invalid: spec.tasks: required",
        },
    }


def test_a_denial_carries_no_patch_but_keeps_warnings() -> None:
    patch = [{"op": "add", "path": "/spec/queue", "value": "default"}]
    answer = response(UID, denial="no", patch=patch, warnings=["w"])["response"]
    assert "patch" not in answer
    assert answer["warnings"] == ["w"]
    assert answer["allowed"] is False
