"""Gang pods others create (Kubeflow's training operator, Spark, a user's own) wait behind Lahar's
scheduling gate, as the pods of Lahar's own Jobs do.

A pod naming a PodGroup (`scheduling.k8s.io/group-name`) for one of the schedulers Lahar serves is
created with Lahar's gate (`GANG_GATE`) added: kube-scheduler leaves it alone until Lahar admits
its gang and lifts the gate, so the gang's pods enter the scheduler's queue together however many
other gangs wait, and a gang that cannot run yet costs the scheduler nothing. Pods already gated by
Lahar, pods bound at creation (`nodeName`: a gate is not allowed there) and every other pod are
left as they are. The patch appends to the pod's gates, so gates other controllers set stay.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from extender.api.scheduling import GANG_GATE, GROUP_ANNOTATION

DEFAULT_SCHEDULER = "default-scheduler"


def gate_patch(pod: Mapping[str, Any] | None, served: Collection[str]) -> list[dict[str, object]]:
    """The JSON patch adding Lahar's gate to `pod`, or none when it is not a gang pod of a
    scheduler in `served` waiting to be placed."""
    if not isinstance(pod, Mapping):
        return []
    meta, spec = _mapping(pod, "metadata"), _mapping(pod, "spec")
    if not _mapping(meta, "annotations").get(GROUP_ANNOTATION) or spec.get("nodeName"):
        return []
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER) not in served:
        return []
    gates = spec.get("schedulingGates")
    if not isinstance(gates, list) or not gates:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GANG_GATE}]}]
    if any(isinstance(g, Mapping) and g.get("name") == GANG_GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": GANG_GATE}}]


def _mapping(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, Mapping) else {}
