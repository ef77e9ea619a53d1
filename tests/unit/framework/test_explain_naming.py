"""What an explanation says of pods that name a group in more than one field (made while the
webhook was down, or before it refused them): those naming this group by a field another wins over
wait for that other group, said with whether it exists; this gang's members are told which field
made them members."""

from __future__ import annotations

import pytest

from extender.api.coscheduling import CoschedulingPodGroup
from extender.api.scheduling import GroupKind
from extender.framework.explain import explain, group_naming
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod
from tests.engines import make_engine

V, C, N = GroupKind.VOLCANO, GroupKind.COSCHEDULING, GroupKind.NATIVE
ANNOTATION = "annotation scheduling.k8s.io/group-name"
LABEL = "label scheduling.x-k8s.io/pod-group"
NATIVE = "spec.schedulingGroup.podGroupName"


def pod(name: str, *groups: tuple[str, GroupKind], namespace: str = "ml") -> PodBuilder:
    built = make_pod(name).ns(namespace).uid(f"{namespace}-{name}").scheduler("lahar").cpu("1")
    for group, kind in groups:
        built = built.group(group, kind)
    return built


@pytest.mark.parametrize(
    ("key", "pods", "exists", "said"),
    [
        (
            C.key("ml", "p"),
            [pod("p-0", ("p", V), ("p", C)), pod("p-1", ("p", V), ("p", C))],
            set(),
            [
                f"pods ml/p-0, ml/p-1 name this group by {LABEL}, but also the Volcano PodGroup "
                f"ml/p by {ANNOTATION}, which wins: they wait for that one (it does not exist: "
                "they wait until it is made)"
            ],
        ),
        (
            C.key("ml", "b"),
            [pod("w-0", ("a", V), ("b", C))],
            {V.key("ml", "a")},
            [
                f"pod ml/w-0 names this group by {LABEL}, but also the Volcano PodGroup ml/a by "
                f"{ANNOTATION}, which wins: it waits for that one"
            ],
        ),
        (
            V.key("ml", "p"),
            [pod("p-0", ("p", V), ("p", C)), pod("p-1", ("p", V), ("p", C))],
            set(),
            [
                f"pods ml/p-0, ml/p-1 join this group by {ANNOTATION}, which wins over their "
                f"{LABEL} naming the Coscheduling PodGroup ml/p"
            ],
        ),
        (
            N.key("ml", "n"),
            [pod("w-0", ("n", C), ("n", N))],
            {C.key("ml", "n")},
            [
                f"pod ml/w-0 names this group by {NATIVE}, but also the Coscheduling PodGroup "
                f"ml/n by {LABEL}, which wins: it waits for that one"
            ],
        ),
        (
            N.key("ml", "n"),
            [pod("w-0", ("a", V), ("b", C), ("n", N))],
            None,  # (not known: said as is)
            [
                f"pod ml/w-0 names this group by {NATIVE}, but also the Volcano PodGroup ml/a by "
                f"{ANNOTATION}, which wins: it waits for that one"
            ],
        ),
        (C.key("ml", "p"), [pod("p-0", ("p", C))], set(), []),
        (C.key("ml", "p"), [pod("p-0", ("p", V), ("q", C))], set(), []),
        (C.key("ml", "p"), [pod("p-0", ("p", V), ("p", C)).phase("Succeeded")], set(), []),
        (C.key("ml", "p"), [pod("p-0", ("p", V), ("p", C), namespace="other")], set(), []),
    ],
    ids=[
        "label-loses-to-annotation",
        "another-name-wins",
        "the-annotations-own-members",
        "native-loses-to-label",
        "three-fields",
        "one-field-says-nothing",
        "names-another-group",
        "finished",
        "another-namespace",
    ],
)
def test_pods_naming_a_group_in_several_fields_are_told_which_wins(
    key: str, pods: list[PodBuilder], exists: set[str] | None, said: list[str]
) -> None:
    found = None if exists is None else exists.__contains__
    assert group_naming(key, [p.model() for p in pods], found) == said


def test_a_coscheduling_gang_whose_pods_carry_the_volcano_annotation_says_what_they_wait_for() -> (
    None
):
    """The pods of a Coscheduling group, moved from Volcano with the annotation still on, are
    filed under the Volcano PodGroup of that name, which does not exist: the group's explanation
    says so instead of only that the scheduler has not asked about its pods."""
    state = cluster(
        [make_node("n0").cpu("8")], [pod(f"p-{i}", ("p", V), ("p", C)) for i in range(2)]
    )
    body = make_group("p").ns("ml").min_member(2).kind_object(C)
    state.upsert_pod_group(CoschedulingPodGroup.model_validate(body).as_gang())
    text = explain(state, make_engine(), C.key("ml", "p")).text()
    assert (
        f"pods ml/p-0, ml/p-1 name this group by {LABEL}, but also the Volcano PodGroup ml/p by "
        f"{ANNOTATION}, which wins: they wait for that one (it does not exist: they wait until "
        "it is made)"
    ) in text
    assert "0 pending" in text
    volcano = explain(state, make_engine(), V.key("ml", "p")).text()
    assert f"join this group by {ANNOTATION}, which wins over their {LABEL}" in volcano
