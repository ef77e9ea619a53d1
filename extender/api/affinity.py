"""Required node affinity, as the in-tree NodeAffinity filter reads it.

`requiredDuringSchedulingIgnoredDuringExecution` holds node selector terms: a node matches when
any term matches, and a term matches when all of its `matchExpressions` (on labels) and
`matchFields` (only `metadata.name`) hold. A term with no requirement matches no node, as in
Kubernetes. Gang plans place members on nodes other than the one the scheduler asks about, so they
check this themselves. Preferred affinity is a score, not a rule: not modelled here.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from extender.api.model import KubeModel, Shared


class NodeSelectorRequirement(KubeModel):
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: list[str] = Field(default_factory=list)

    def satisfied_by(self, value: str | None) -> bool:
        """Whether a node whose `key` is `value` (None: absent) satisfies the requirement."""
        op = self.operator
        if op in ("Exists", "DoesNotExist"):
            return (value is not None) == (op == "Exists")
        if op in ("In", "NotIn"):
            return (value is not None and value in self.values) == (op == "In")
        if op in ("Gt", "Lt") and value is not None and len(self.values) == 1:
            try:
                have, bound = int(value), int(self.values[0])
            except ValueError:
                return False
            return have > bound if op == "Gt" else have < bound
        return False


class NodeSelectorTerm(KubeModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        fields = {"metadata.name": name}
        return all(r.satisfied_by(labels.get(r.key)) for r in self.match_expressions) and all(
            r.satisfied_by(fields.get(r.key)) for r in self.match_fields
        )


class NodeSelector(KubeModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        return any(term.matches(labels, name) for term in self.node_selector_terms)


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None


class Affinity(Shared):
    node_affinity: NodeAffinity | None = None

    def allows(self, labels: Mapping[str, str], name: str) -> bool:
        """Whether the required node affinity (if any) lets the pod onto this node."""
        required = (
            self.node_affinity.required_during_scheduling_ignored_during_execution
            if self.node_affinity is not None
            else None
        )
        return required is None or required.matches(labels, name)
