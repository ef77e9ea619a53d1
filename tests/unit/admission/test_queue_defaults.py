"""Queue defaults on CREATE, as Volcano's mutating webhook gives them: weight 1, reclaimable
true, a hierarchy path put under root; a queue that has them gets no patch."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.admission.admit import Settings, mutate_queue
from extender.admission.queue_defaults import queue_defaults
from extender.admission.queues import check_queue
from tests.builders import make_queue, make_review
from tests.unit.admission.helpers import apply_patch, cluster_queues

HIERARCHY = {"volcano.sh/hierarchy": "ml/team-a", "volcano.sh/hierarchy-weights": "2/1"}
AT_ROOT = {"volcano.sh/hierarchy": "root/ml", "volcano.sh/hierarchy-weights": "1/2"}
H, W = (
    "/metadata/annotations/volcano.sh~1hierarchy",
    "/metadata/annotations/volcano.sh~1hierarchy-weights",
)


def queue(
    spec: Any = None, annotations: dict[str, str] | None = None, **fields: Any
) -> dict[str, Any]:
    """A new queue: `spec` as given (None: no spec at all), else weight 2, not reclaimable,
    with `fields` over it (a value of `...` removes the field)."""
    body = make_queue("research").build()
    if spec is None and not fields:
        del body["spec"]
    else:
        body["spec"] = dict(spec or {"weight": 2, "reclaimable": False})
        for key, value in fields.items():
            if value is ...:
                body["spec"].pop(key, None)
            else:
                body["spec"][key] = value
    if annotations is not None:
        body["metadata"]["annotations"] = annotations
    return body


def add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (queue(weight=2), []),
        (queue(weight=0), [add("/spec/weight", 1)]),
        (queue(weight=...), [add("/spec/weight", 1)]),
        (queue(reclaimable=...), [add("/spec/reclaimable", True)]),
        (queue(reclaimable=None), [add("/spec/reclaimable", True)]),
        (queue(reclaimable=True), []),
        (queue(), [add("/spec", {"weight": 1, "reclaimable": True})]),
        (
            queue(weight=2, annotations=HIERARCHY),
            [add(H, "root/ml/team-a"), add(W, "1/2/1")],
        ),
        (queue(weight=2, annotations=AT_ROOT), []),
        # a path without its weights: left for the validating webhook
        (queue(weight=2, annotations={"volcano.sh/hierarchy": "ml"}), []),
        # wrong types: left for the validating webhook to name
        (queue(weight="0"), []),
        (queue(weight=False), []),
        ({**queue(weight=2), "spec": [1]}, []),
    ],
    ids=[
        "complete",
        "weight-zero",
        "weight-missing",
        "reclaimable-missing",
        "reclaimable-null",
        "reclaimable-true",
        "no-spec",
        "hierarchy-under-root",
        "hierarchy-at-root",
        "hierarchy-without-weights",
        "weight-string",
        "weight-bool",
        "spec-not-an-object",
    ],
)
def test_each_default(body: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert queue_defaults(body) == expected


def test_the_webhook_patches_a_new_queue_and_the_rules_accept_it() -> None:
    body = queue(weight=0, reclaimable=...)
    outcome = mutate_queue(make_review(body).request(), cluster_queues(), Settings("lahar"))
    assert outcome.decision.allowed
    patched = apply_patch(body, [dict(op) for op in outcome.decision.patch])
    assert (patched["spec"]["weight"], patched["spec"]["reclaimable"]) == (1, True)
    assert check_queue(patched, cluster_queues(), None) == []


@given(
    st.dictionaries(
        st.sampled_from(["weight", "reclaimable", "priority"]),
        st.none() | st.booleans() | st.integers(-2, 3),
    )
)
def test_any_spec_gets_a_patch_that_applies(spec: dict[str, Any]) -> None:
    body = queue(spec or {"priority": 0})
    patched = apply_patch(body, queue_defaults(body))
    assert "weight" in patched["spec"] and patched["spec"].get("reclaimable") is not None
