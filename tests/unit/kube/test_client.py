"""Reading a Kubernetes Status: the fields a refusal names as causes."""

from __future__ import annotations

from typing import Any

import pytest

from extender.kube.client import status_fields


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (
            {
                "reason": "Invalid",
                "details": {
                    "causes": [
                        {"reason": "FieldValueNotSupported", "field": "spec.containers[0].x"},
                        {"reason": "FieldValueRequired", "field": "spec.y"},
                    ]
                },
            },
            ("spec.containers[0].x", "spec.y"),
        ),
        # a webhook's or a policy's denial: no field at fault
        (b'{"reason": "BadRequest", "message": "admission webhook denied"}', ()),
        ({"details": {"causes": [{"message": "no field"}]}}, ()),
        ({"details": {"causes": "odd"}}, ()),
        (b"not json", ()),
        (None, ()),
    ],
)
def test_status_fields(body: Any, fields: tuple[str, ...]) -> None:
    assert status_fields(body) == fields
