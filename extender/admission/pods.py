"""Gang pods others create (Kubeflow's training operator, Spark, a user's own) wait behind Lahar's
scheduling gate, as the pods of Lahar's own Jobs do.

A pod naming a PodGroup for one of the schedulers Lahar serves (a Volcano one through the
annotation `scheduling.k8s.io/group-name`, a Coscheduling one through the label
`scheduling.x-k8s.io/pod-group`, a native one through `spec.schedulingGroup`) is created with
Lahar's gate (`GANG_GATE`) added: kube-scheduler leaves it alone until Lahar admits
its gang and lifts the gate, so the gang's pods enter the scheduler's queue together however many
other gangs wait, and a gang that cannot run yet costs the scheduler nothing. Pods already gated by
Lahar, pods bound at creation (`nodeName`: a gate is not allowed there) and every other pod are
left as they are. The patch appends to the pod's gates, so gates other controllers set stay. A pod
naming two different groups (`naming_problems`) is refused: it could only ever join one of them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from extender.admission.problems import Problem
from extender.api.scheduling import GANG_GATE, named_groups

DEFAULT_SCHEDULER = "default-scheduler"


def gate_patch(pod: Mapping[str, Any] | None, served: Collection[str]) -> list[dict[str, object]]:
    """The JSON patch adding Lahar's gate to `pod`, or none when it is not a gang pod of a
    scheduler in `served` waiting to be placed."""
    if not isinstance(pod, Mapping):
        return []
    spec = _mapping(pod, "spec")
    if not _names(pod) or spec.get("nodeName"):
        return []
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER) not in served:
        return []
    gates = spec.get("schedulingGates")
    if not isinstance(gates, list) or not gates:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GANG_GATE}]}]
    if any(isinstance(g, Mapping) and g.get("name") == GANG_GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": GANG_GATE}}]


def naming_problems(pod: Mapping[str, Any] | None, served: Collection[str]) -> list[Problem]:
    """A pod of a scheduler in `served` naming two different groups, in any two of the three
    ways, is refused."""
    if not isinstance(pod, Mapping):
        return []
    if (_mapping(pod, "spec").get("schedulerName") or DEFAULT_SCHEDULER) not in served:
        return []
    names = _names(pod)
    if len(set(names.values())) <= 1:
        return []
    first, *others = names.items()
    return [
        Problem(
            field,
            f"names group {name!r} but {first[0]} names {first[1]!r}: a pod belongs to one group",
        )
        for field, name in others
        if name != first[1]
    ]


def _names(pod: Mapping[str, Any]) -> dict[str, str]:
    meta, spec = _mapping(pod, "metadata"), _mapping(pod, "spec")
    group = _mapping(spec, "schedulingGroup").get("podGroupName")
    return named_groups(_mapping(meta, "annotations"), _mapping(meta, "labels"), group)


def _mapping(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, Mapping) else {}
