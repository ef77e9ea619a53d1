"""The three fields a pod names its PodGroup by: the same paths `named_groups` gives, in the order
`gang_key` reads them (the first a pod carries wins), and gang keys read back."""

from __future__ import annotations

import pytest

from extender.api.group_fields import BY_KIND, FIELDS, pod_fields, split_key
from extender.api.scheduling import GroupKind, gang_key, group_names
from tests.builders import make_pod


def test_the_fields_are_named_groups_paths_in_gang_keys_order() -> None:
    pod = (
        make_pod("w")
        .group("a")
        .group("b", GroupKind.COSCHEDULING)
        .group("c", GroupKind.NATIVE)
        .model()
    )
    assert [field.path for field in FIELDS] == list(group_names(pod))
    assert [(field.kind, name) for field, name in pod_fields(pod)] == [
        (GroupKind.VOLCANO, "a"),
        (GroupKind.COSCHEDULING, "b"),
        (GroupKind.NATIVE, "c"),
    ]
    assert {field.kind for field in FIELDS} == set(GroupKind) == set(BY_KIND)


@pytest.mark.parametrize(
    ("kinds", "winner"),
    [
        ((GroupKind.COSCHEDULING, GroupKind.VOLCANO), GroupKind.VOLCANO),
        ((GroupKind.NATIVE, GroupKind.COSCHEDULING), GroupKind.COSCHEDULING),
        ((GroupKind.NATIVE, GroupKind.VOLCANO), GroupKind.VOLCANO),
        ((GroupKind.NATIVE,), GroupKind.NATIVE),
    ],
    ids=["annotation-over-label", "label-over-native", "annotation-over-native", "alone"],
)
def test_the_first_field_is_the_one_the_cache_files_the_pod_under(
    kinds: tuple[GroupKind, ...], winner: GroupKind
) -> None:
    builder = make_pod("w")
    for kind in kinds:
        builder = builder.group("g", kind)
    pod = builder.model()
    (first, name), *_ = pod_fields(pod)
    assert first.kind is winner
    assert gang_key(pod) == first.kind.key("default", name)


@pytest.mark.parametrize("kind", list(GroupKind))
def test_a_gang_key_reads_back(kind: GroupKind) -> None:
    assert split_key(kind.key("ml", "tf-a")) == ("ml", kind, "tf-a")


def test_each_field_says_its_kind_and_api_group() -> None:
    assert [(field.said, field.group, field.kind_name) for field in FIELDS] == [
        (
            "annotation scheduling.k8s.io/group-name",
            "scheduling.volcano.sh",
            "Volcano PodGroup",
        ),
        ("label scheduling.x-k8s.io/pod-group", "scheduling.x-k8s.io", "Coscheduling PodGroup"),
        ("spec.schedulingGroup.podGroupName", "scheduling.k8s.io", "native PodGroup"),
    ]
