"""The three fields through which a pod names its PodGroup, the kind of PodGroup each is for, and
which one wins when a pod carries more than one.

A pod joins a Volcano PodGroup by the annotation `scheduling.k8s.io/group-name`, a Coscheduling
one by the label `scheduling.x-k8s.io/pod-group` and a native one by
`spec.schedulingGroup.podGroupName`. `FIELDS` lists them in the order `scheduling.gang_key` reads
them: a pod that carries several is filed under the first, and waits for that group alone. The
webhook refuses a pod that carries two (`admission.pods`); one that got in all the same (created
while the webhook was down, or before it was installed) is told apart by `lahar explain`, which
says which field won. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.api.objects import Pod
from extender.api.scheduling import COSCHEDULING_LABEL, GROUP_ANNOTATION, GroupKind, group_names


@dataclass(frozen=True)
class GroupField:
    path: str  # as `scheduling.named_groups` and the webhook's messages write it
    kind: GroupKind  # the kind of PodGroup it names
    said: str  # how a sentence names it: "annotation scheduling.k8s.io/group-name"
    short: str  # how advice names it: "the annotation"

    @property
    def group(self) -> str:
        """The kind's API group (`scheduling.volcano.sh`)."""
        return self.kind.api_version.partition("/")[0]

    @property
    def kind_name(self) -> str:
        """The kind in words: "Volcano PodGroup"."""
        return KIND_NAMES[self.kind]


KIND_NAMES = {
    GroupKind.VOLCANO: "Volcano PodGroup",
    GroupKind.COSCHEDULING: "Coscheduling PodGroup",
    GroupKind.NATIVE: "native PodGroup",
}
FIELDS = (
    GroupField(
        f"metadata.annotations[{GROUP_ANNOTATION}]",
        GroupKind.VOLCANO,
        f"annotation {GROUP_ANNOTATION}",
        "the annotation",
    ),
    GroupField(
        f"metadata.labels[{COSCHEDULING_LABEL}]",
        GroupKind.COSCHEDULING,
        f"label {COSCHEDULING_LABEL}",
        "the label",
    ),
    GroupField(
        "spec.schedulingGroup.podGroupName",
        GroupKind.NATIVE,
        "spec.schedulingGroup.podGroupName",
        "spec.schedulingGroup",
    ),
)
BY_PATH = {field.path: field for field in FIELDS}
BY_KIND = {field.kind: field for field in FIELDS}

Naming = list[tuple[GroupField, str]]  # (field, the group it names), the winning field first


def fields_of(names: dict[str, str]) -> Naming:
    """`scheduling.named_groups`' answer (field path -> name) as fields, the winning one first."""
    return [(field, names[field.path]) for field in FIELDS if field.path in names]


def pod_fields(pod: Pod) -> Naming:
    """Each field through which `pod` names a group, and the name, the winning one first."""
    return fields_of(group_names(pod))


def split_key(key: str) -> tuple[str, GroupKind, str]:
    """A gang key (`GroupKind.key`) as its namespace, kind and group name."""
    namespace, _, rest = key.partition("/")
    for kind in (GroupKind.COSCHEDULING, GroupKind.NATIVE):
        prefix = f"{kind.value}/"
        if rest.startswith(prefix):
            return namespace, kind, rest.removeprefix(prefix)
    return namespace, GroupKind.VOLCANO, rest  # (a Volcano group's name has no '/')
