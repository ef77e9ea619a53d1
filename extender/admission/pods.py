"""Gang pods others create (Kubeflow's training operator, Spark, a user's own) wait behind Lahar's
scheduling gate until their gang is admitted, as Volcano Jobs' pods wait to be created.

A pod naming a PodGroup for one of the schedulers Lahar serves (a Volcano one through the
annotation `scheduling.k8s.io/group-name`, a Coscheduling one through the label
`scheduling.x-k8s.io/pod-group`, a native one through `spec.schedulingGroup`) is created with
Lahar's gate (`GANG_GATE`) added: kube-scheduler leaves it alone until Lahar admits
its gang and lifts the gate, so the gang's pods enter the scheduler's queue together however many
other gangs wait, and a gang that cannot run yet costs the scheduler nothing. Pods already gated by
Lahar, pods bound at creation (`nodeName`: a gate is not allowed there), pods a Volcano Job owns
(`of_volcano_job`: its controller creates them once their gang is admitted, the gate's work done
with one status write) and every other pod are left as they are. The patch appends to the pod's
gates, so gates other controllers set stay.

A pod that names a group in two of those ways, or all three, is refused (`naming_problems`), with
the same name or different ones: a pod joins one PodGroup, the one of the first field Lahar reads
(`api.group_fields`), and a pod moved from one scheduler to another that kept the old field would
otherwise wait for ever for a group of the kind its user does not use. The message names the
fields and which to keep for which kind of PodGroup. Only pods of the schedulers served are
gated or refused: any other pod is left as it is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from extender.admission.problems import Problem, shown
from extender.api.batch import BATCH_API_VERSION
from extender.api.group_fields import Naming, fields_of
from extender.api.job_pods import DEFAULT_SCHEDULER
from extender.api.scheduling import GANG_GATE, named_groups

BATCH_GROUP = BATCH_API_VERSION.split("/")[0]


def gate_patch(pod: Mapping[str, Any] | None, served: Collection[str]) -> list[dict[str, object]]:
    """The JSON patch adding Lahar's gate to `pod`, or none when it is not a gang pod of a
    scheduler in `served` waiting to be placed."""
    if not isinstance(pod, Mapping):
        return []
    spec = _mapping(pod, "spec")
    if not _names(pod) or spec.get("nodeName") or of_volcano_job(pod):
        return []
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER) not in served:
        return []
    gates = spec.get("schedulingGates")
    if not isinstance(gates, list) or not gates:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GANG_GATE}]}]
    if any(isinstance(g, Mapping) and g.get("name") == GANG_GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": GANG_GATE}}]


def of_volcano_job(pod: Mapping[str, Any]) -> bool:
    """A Volcano Job owns the pod: its controller creates its pods once the gang is admitted
    (the PodGroup left Pending), or behind Lahar's gate itself."""
    owners = _mapping(pod, "metadata").get("ownerReferences")
    return isinstance(owners, list) and any(
        isinstance(owner, Mapping)
        and owner.get("kind") == "Job"
        and str(owner.get("apiVersion", "")).startswith(f"{BATCH_GROUP}/")
        for owner in owners
    )


def naming_problems(pod: Mapping[str, Any] | None, served: Collection[str]) -> list[Problem]:
    """A pod of a scheduler in `served` naming a group in more than one way (the same group or
    not) is refused, naming the fields and which to keep."""
    if not isinstance(pod, Mapping):
        return []
    if (_mapping(pod, "spec").get("schedulerName") or DEFAULT_SCHEDULER) not in served:
        return []
    naming = fields_of(_names(pod))
    if len(naming) <= 1:
        return []
    return [Problem(_listed([field.path for field, _ in naming]), two_groups(naming))]


def two_groups(naming: Naming) -> str:
    """Why a pod naming groups in the fields of `naming` (two or three) is refused, and what to
    keep: "they name 'a' and 'b': a pod joins one PodGroup; keep the annotation for a
    scheduling.volcano.sh PodGroup or the label for a scheduling.x-k8s.io one"."""
    names = [name for _, name in naming]
    if len(set(names)) == 1:
        said = f"{'both' if len(names) == 2 else 'all'} name {shown(names[0])}"
    else:
        said = f"they name {_listed([shown(name) for name in names])}"
    keep = [
        f"{field.short} for a {field.group} {'PodGroup' if i == 0 else 'one'}"
        for i, (field, _) in enumerate(naming)
    ]
    return f"{said}: a pod joins one PodGroup; keep {_listed(keep, 'or')}"


def _listed(items: list[str], last: str = "and") -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def _names(pod: Mapping[str, Any]) -> dict[str, str]:
    meta, spec = _mapping(pod, "metadata"), _mapping(pod, "spec")
    group = _mapping(spec, "schedulingGroup").get("podGroupName")
    return named_groups(_mapping(meta, "annotations"), _mapping(meta, "labels"), group)


def _mapping(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, Mapping) else {}
