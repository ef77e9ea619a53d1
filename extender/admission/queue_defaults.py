"""Queue defaults (`scheduling.volcano.sh/v1beta1`), as Volcano's mutating webhook gives them on
CREATE: `weight` 1 when 0 or missing, `reclaimable` true when missing, and a hierarchy path given
by annotation (`volcano.sh/hierarchy` with its `volcano.sh/hierarchy-weights`) that does not
start at `root` is put under it (`root/<path>`, weights `1/<weights>`).

An empty `spec.parent` is left empty, where Volcano's queue controller writes `root`: Lahar's
scheduler and webhook read none as `root`, so the patch would change nothing but every queue a
user applies.

A minimal JSONPatch, one `add` per default; a queue that has them gets no patch. Values of the
wrong type are left for the validating webhook to name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.admission.problems import add
from extender.admission.queue_tree import ROOT_QUEUE
from extender.admission.queues import HIERARCHY, HIERARCHY_WEIGHTS

DEFAULT_WEIGHT = 1


def queue_defaults(queue: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSONPatch that gives a new `queue` Volcano's defaults."""
    patch = _hierarchy(queue.get("metadata"))
    spec = queue.get("spec")
    if spec is None:
        return [*patch, add(("spec",), {"weight": DEFAULT_WEIGHT, "reclaimable": True})]
    if not isinstance(spec, Mapping):
        return patch
    weight = spec.get("weight")
    if weight is None or (weight == 0 and type(weight) is int):
        patch.append(add(("spec", "weight"), DEFAULT_WEIGHT))
    if spec.get("reclaimable") is None:
        patch.append(add(("spec", "reclaimable"), True))
    return patch


def _hierarchy(metadata: Any) -> list[dict[str, Any]]:
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return []
    path, weights = annotations.get(HIERARCHY), annotations.get(HIERARCHY_WEIGHTS)
    if not (isinstance(path, str) and isinstance(weights, str) and path and weights):
        return []
    if path.startswith(ROOT_QUEUE):  # Volcano's test: a prefix, not a path segment
        return []
    return [
        add(("metadata", "annotations", HIERARCHY), f"root/{path}"),
        add(("metadata", "annotations", HIERARCHY_WEIGHTS), f"1/{weights}"),
    ]
