"""Volcano's network topology API as Lahar reads it: the cluster-scoped `HyperNode`
(`topology.volcano.sh/v1alpha1`).

A HyperNode is a group of nodes that talk to each other over one network layer (a switch, a
spine): its `tier` says how far apart its members are (1 the nearest; a higher tier contains lower
ones), its `members` are nodes or other HyperNodes, each chosen by one selector: `exactMatch` (a
name), `regexMatch` (a pattern on node names) or `labelMatch` (a label selector on nodes; nodes
only). `members_of` resolves a selector against the nodes, as Volcano's `GetMembers` does; the
tree built from them is `gangs.topology`. A Job or PodGroup asks to stay within one HyperNode with
`networkTopology` (`api.scheduling.NetworkTopology`).

The CRD's checks (a tier of 0 or more, at least one member, one selector per member, a valid
exact name, a non-empty pattern) are `Crd` markers: the API server enforces them, the model reads
any value, so a HyperNode stored under an older or looser CRD is still read (an invalid one
chooses nothing), and the webhook (`admission.hypernodes`) words each refusal. Pure.

The same concept at higher layers: `gangs.topology`, the HyperNodes resolved for placement, and
`admission.topology`, the rules on a Job's topology fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Annotated, Literal

from extender.api.model import KubeModel
from extender.api.objects import ObjectMeta
from extender.api.schema import Crd, Int64, Time

API_VERSION = "topology.volcano.sh/v1alpha1"
KIND = "HyperNode"
NODE = "Node"
HYPER_NODE = "HyperNode"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
MAX_NAME = 253
# The CRD's rules on a member's selector (CEL, checked by the API server): one selector, no more
# (plain boolean tests: the API server bounds the estimated cost of a rule over every member).
ONE_SELECTOR = (
    (
        "has(self.exactMatch) || has(self.regexMatch) || has(self.labelMatch)",
        "give one of exactMatch, regexMatch or labelMatch",
    ),
    (
        "!(has(self.exactMatch) && has(self.regexMatch)) && "
        "!(has(self.exactMatch) && has(self.labelMatch)) && "
        "!(has(self.regexMatch) && has(self.labelMatch))",
        "give only one of exactMatch, regexMatch and labelMatch",
    ),
)


class LabelSelectorRequirement(KubeModel):
    key: str
    """The label key the requirement applies to."""
    operator: str
    """In, NotIn, Exists or DoesNotExist."""
    values: Annotated[list[str], Crd(list_type="atomic")] | None = None
    """The values for In and NotIn (none for Exists and DoesNotExist)."""

    def satisfied_by(self, labels: Mapping[str, str]) -> bool:
        value, op = labels.get(self.key), self.operator
        if op in ("Exists", "DoesNotExist"):
            return (value is not None) == (op == "Exists")
        if op in ("In", "NotIn"):
            return (value is not None and value in (self.values or ())) == (op == "In")
        return False


class LabelSelector(KubeModel):
    """A label query over nodes, as Kubernetes' metav1.LabelSelector."""

    match_labels: dict[str, str] | None = None
    """{key: value} pairs, each an In requirement of one value; all must hold."""
    match_expressions: Annotated[list[LabelSelectorRequirement], Crd(list_type="atomic")] | None = (
        None
    )
    """Requirements that must all hold."""

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        wanted = self.match_labels or {}
        return all(labels.get(k) == v for k, v in wanted.items()) and all(
            r.satisfied_by(labels) for r in self.match_expressions or ()
        )


class ExactMatch(KubeModel):
    name: Annotated[str, Crd(min_length=1, max_length=MAX_NAME, pattern=DNS_SUBDOMAIN)]
    """The exact name of the node or HyperNode to match."""


class RegexMatch(KubeModel):
    pattern: Annotated[str, Crd(min_length=1)]
    """A regular expression matched against node names."""


class MemberSelector(KubeModel):
    """How a member is chosen: exactly one of the three."""

    exact_match: ExactMatch | None = None
    """The exact name of a node or HyperNode."""
    regex_match: RegexMatch | None = None
    """A pattern on node names."""
    label_match: Annotated[LabelSelector, Crd(map_type="atomic")] | None = None
    """A label selector on nodes (only for members of type Node)."""

    @property
    def kinds(self) -> list[str]:
        """The selectors it sets, by their field names."""
        return [
            name
            for name, value in (
                ("exactMatch", self.exact_match),
                ("regexMatch", self.regex_match),
                ("labelMatch", self.label_match),
            )
            if value is not None
        ]


class MemberSpec(KubeModel):
    type: Literal["Node", "HyperNode"]
    """Node: the selector chooses nodes; HyperNode: it names a HyperNode of a lower tier."""
    selector: Annotated[MemberSelector, Crd(validations=ONE_SELECTOR)] = MemberSelector()
    """How the member is chosen."""


class HyperNodeSpec(KubeModel):
    tier: Annotated[int, Crd(minimum=0, required=True)] = 0
    """How far apart its members are in the network: 1 the nearest; a HyperNode's members are
    of lower tiers."""
    tier_name: Annotated[str, Crd(max_length=MAX_NAME)] | None = None
    """The tier's name (networkTopology's highestTierName refers to it)."""
    members: Annotated[list[MemberSpec], Crd(min_items=1)] | None = None
    """The nodes or HyperNodes it holds."""


class HyperNodeCondition(KubeModel):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: Time | None = None
    observed_generation: Int64 | None = None


class HyperNodeStatus(KubeModel):
    conditions: list[HyperNodeCondition] | None = None
    """The HyperNode's current state."""
    node_count: Annotated[Int64, Crd(minimum=0)] | None = None
    """How many nodes it holds, directly or through its members."""


class HyperNode(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    spec: HyperNodeSpec = HyperNodeSpec()
    status: HyperNodeStatus = HyperNodeStatus()

    @property
    def name(self) -> str:
        return self.metadata.name

    @cached_property
    def tier_label(self) -> str:
        """How explanations name its tier: `tier 1`, or `tier 1 (leaf-switch)`."""
        name = self.spec.tier_name
        return f"tier {self.spec.tier}" + (f" ({name})" if name else "")


def members_of(
    selector: MemberSelector, nodes: Sequence[tuple[str, Mapping[str, str]]]
) -> set[str]:
    """The names a member selector chooses among `nodes` (name, labels), as Volcano resolves
    them: an exact name as it stands (a node or a HyperNode, known or not), every node whose
    name the pattern matches (anywhere in the name, as Go's MatchString), every node the label
    selector matches (an empty selector matches none). An invalid pattern matches nothing (the
    webhook refuses it)."""
    chosen: set[str] = set()
    if selector.exact_match is not None and selector.exact_match.name:
        chosen.add(selector.exact_match.name)
    if selector.regex_match is not None:
        try:
            pattern = re.compile(selector.regex_match.pattern)
        except re.error:
            pattern = None
        if pattern is not None:
            chosen.update(name for name, _ in nodes if pattern.search(name))
    if selector.label_match is not None and not selector.label_match.empty:
        label_match = selector.label_match
        chosen.update(name for name, labels in nodes if label_match.matches(labels))
    return chosen
