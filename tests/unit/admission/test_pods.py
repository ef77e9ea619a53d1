"""A pod naming its PodGroup in more than one way is refused, with the same name or not, naming
the fields and which to keep for which kind of PodGroup; pods of other schedulers are not."""

from __future__ import annotations

import pytest

from extender.admission.pods import naming_problems
from extender.api.scheduling import GroupKind
from tests.builders import PodBuilder, make_pod

ANNOTATION = "metadata.annotations[scheduling.k8s.io/group-name]"
LABEL = "metadata.labels[scheduling.x-k8s.io/pod-group]"
NATIVE = "spec.schedulingGroup.podGroupName"
VOLCANO_OR_COSCHEDULING = (
    "a pod joins one PodGroup; keep the annotation for a scheduling.volcano.sh PodGroup or the "
    "label for a scheduling.x-k8s.io one"
)
SERVED = frozenset({"lahar", "volcano"})


def pod(*groups: tuple[str, GroupKind], scheduler: str = "lahar") -> PodBuilder:
    built = make_pod("w").scheduler(scheduler)
    for name, kind in groups:
        built = built.group(name, kind)
    return built


V, C, N = GroupKind.VOLCANO, GroupKind.COSCHEDULING, GroupKind.NATIVE


@pytest.mark.parametrize(
    ("builder", "said"),
    [
        (
            pod(("tf", V), ("tf", C)),
            f"{ANNOTATION} and {LABEL}: both name 'tf': {VOLCANO_OR_COSCHEDULING}",
        ),
        (
            pod(("a", V), ("b", C)),
            f"{ANNOTATION} and {LABEL}: they name 'a' and 'b': {VOLCANO_OR_COSCHEDULING}",
        ),
        (
            pod(("tf", V), ("tf", N)),
            f"{ANNOTATION} and {NATIVE}: both name 'tf': a pod joins one PodGroup; keep the "
            "annotation for a scheduling.volcano.sh PodGroup or spec.schedulingGroup for a "
            "scheduling.k8s.io one",
        ),
        (
            pod(("a", C), ("b", N), scheduler="volcano"),
            f"{LABEL} and {NATIVE}: they name 'a' and 'b': a pod joins one PodGroup; keep the "
            "label for a scheduling.x-k8s.io PodGroup or spec.schedulingGroup for a "
            "scheduling.k8s.io one",
        ),
        (
            pod(("tf", V), ("tf", C), ("tf", N)),
            f"{ANNOTATION}, {LABEL} and {NATIVE}: all name 'tf': a pod joins one PodGroup; keep "
            "the annotation for a scheduling.volcano.sh PodGroup, the label for a "
            "scheduling.x-k8s.io one or spec.schedulingGroup for a scheduling.k8s.io one",
        ),
        (
            pod(("a", V), ("b", C), ("a", N)),
            f"{ANNOTATION}, {LABEL} and {NATIVE}: they name 'a', 'b' and 'a': a pod joins one "
            "PodGroup; keep the annotation for a scheduling.volcano.sh PodGroup, the label for a "
            "scheduling.x-k8s.io one or spec.schedulingGroup for a scheduling.k8s.io one",
        ),
        (pod(("tf", V)), None),
        (pod(("tf", C)), None),
        (pod(("tf", N)), None),
        (pod(), None),
        (pod(("a", V), ("b", C), scheduler="default-scheduler"), None),
        (pod(("a", V), ("b", C), scheduler="coscheduling"), None),
    ],
    ids=[
        "annotation-and-label-same-name",
        "annotation-and-label-different-names",
        "annotation-and-native",
        "label-and-native",
        "all-three-same-name",
        "all-three-two-names",
        "annotation-alone",
        "label-alone",
        "native-alone",
        "no-group",
        "default-scheduler-not-served",
        "another-scheduler-not-served",
    ],
)
def test_a_pod_names_one_group_one_way(builder: PodBuilder, said: str | None) -> None:
    problems = naming_problems(builder.build(), SERVED)
    assert [str(problem) for problem in problems] == ([said] if said else [])


def test_a_long_name_is_clipped_in_the_message() -> None:
    long = "g" * 200
    (problem,) = naming_problems(pod((long, V), ("tf", C)).build(), SERVED)
    assert len(str(problem)) < 400 and "they name 'ggg" in str(problem)


@pytest.mark.parametrize("body", [None, {}, {"spec": "x"}, {"metadata": {"labels": "x"}}])
def test_what_is_not_a_pod_has_no_naming_problem(body: object) -> None:
    assert naming_problems(body, SERVED) == []  # type: ignore[arg-type]
