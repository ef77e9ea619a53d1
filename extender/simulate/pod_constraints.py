"""Where a trace task's pods may run: its nodeSelector, tolerations and node affinity, checked
as the API server would check them in a pod and as far as the simulation models them.

A task may say where its pods run exactly as a pod spec does. The checks are the pod template
rules the webhook applies (`admission.templates`), the pod read by the extender's own model
(`api.objects.Pod`), and node selector requirements as kube-apiserver validates them (operators,
values, `matchFields` on `metadata.name` only), since the webhook leaves those to the API server
and a trace has none in front of it. Node affinity is modelled; pod affinity and anti-affinity
are refused, not ignored. A problem is a ValueError naming the task's field (`tolerations.0.key`).
Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from extender.admission.names import qualified_name
from extender.admission.templates import template_problems
from extender.api.affinity import NodeSelectorRequirement
from extender.api.objects import Pod
from extender.api.wire import describe_invalid

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
REQUIRED = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


def check_constraints(spec: Mapping[str, Any]) -> None:
    """A task's nodeSelector, tolerations and affinity are what the API server would take in a
    pod, and what the simulation models: the pod template's rules (`admission.templates`), the
    pod built from them (`api.objects.Pod`), node selector requirements as Kubernetes validates
    them, and node affinity only (pod affinity and anti-affinity are not modelled)."""
    if not spec:
        return
    template = {"spec": {"containers": [{"name": "main", "image": "pause"}], **spec}}
    for refused in template_problems(template):
        raise ValueError(_dotted(str(refused)))
    others = sorted(set(spec.get("affinity") or {}) - {"nodeAffinity"})
    if others:
        raise ValueError(
            f"affinity.{others[0]}: not modelled: the simulation places pods by node affinity only"
        )
    try:
        pod = Pod.model_validate({"spec": spec})
    except ValidationError as error:
        raise ValueError(_dotted(describe_invalid(error))) from None
    node_affinity = pod.spec.affinity.node_affinity
    required = (
        node_affinity.required_during_scheduling_ignored_during_execution
        if node_affinity is not None
        else None
    )
    for number, term in enumerate(required.node_selector_terms if required is not None else ()):
        for kind, requirements in (
            ("matchExpressions", term.match_expressions),
            ("matchFields", term.match_fields),
        ):
            for index, requirement in enumerate(requirements):
                problem = _requirement_problem(requirement, fields=kind == "matchFields")
                if problem is not None:
                    raise ValueError(f"{REQUIRED}.{number}.{kind}.{index}.{problem}")


def _requirement_problem(requirement: NodeSelectorRequirement, *, fields: bool) -> str | None:
    """What the API server refuses in a node selector requirement (the field and why), or None."""
    key, operator, values = requirement.key, requirement.operator, requirement.values
    if fields:
        problems = [
            (key != "metadata.name", f"key: matchFields reads metadata.name only, not {key!r}"),
            (
                operator not in ("In", "NotIn") or len(values) != 1,
                "operator: In or NotIn, with one node name in values",
            ),
        ]
    else:
        reason = qualified_name(key)
        integer = len(values) == 1 and values[0].removeprefix("-").isdigit()
        given = bool(values)
        problems = [
            (reason is not None, f"key: {key!r} {reason}"),
            (
                operator not in OPERATORS,
                f"operator: must be one of {', '.join(OPERATORS)}, got {operator!r}",
            ),
            (operator in ("In", "NotIn") and not values, f"values: {operator} needs a value"),
            (operator in ("Exists", "DoesNotExist") and given, f"values: none with {operator}"),
            (operator in ("Gt", "Lt") and not integer, f"values: {operator} takes one integer"),
        ]
    return next((message for wrong, message in problems if wrong), None)


def _dotted(problem: str) -> str:
    """A pod spec's field path (`spec.tolerations[0].operator`) as the trace's task names it
    (`tolerations.0.operator`)."""
    return re.sub(r"\[(\d+)\]", r".\1", re.sub(r"(^|; )spec\.", r"\1", problem))
