"""`lahar explain`'s pure parts: the PodGroup's summary split back into lines, the printed text,
and errors that name the flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.api.group_fields import BY_KIND
from extender.api.scheduling import GroupKind
from extender.cli.explain_cmd import (
    Extender,
    from_coscheduling_group,
    from_extender,
    from_group,
    from_native_group,
    pod_group_lines,
    pod_row,
    target,
    text,
)
from extender.kube import KubeError

SUMMARY = (
    "gang ns/big: 1 of 2 members cannot be placed: Insufficient cpu. "
    "backing off until 2027-01-15T08:00:30Z. "
    "2 pending asking cpu 6: one fits on 1 node now (unreserved capacity). "
    "queue default: allocated nothing; deserves cpu 12 (share 0.00)"
)


def group(conditions: list[dict[str, Any]], phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {"name": "big", "namespace": "ns"},
        "spec": {"minMember": 2, "queue": "default"},
        "status": {"phase": phase, "conditions": conditions},
    }


def test_the_condition_summary_comes_back_one_sentence_a_line() -> None:
    condition = {
        "type": "Unschedulable",
        "status": "True",
        "reason": "NotEnoughResources",
        "message": SUMMARY,
        "lastTransitionTime": "2027-01-15T08:00:00Z",
    }
    assert from_group(group([condition])) == [
        "phase Pending: 0 running, 0 succeeded, 0 failed of minMember 2 (queue default)",
        "Unschedulable=True (NotEnoughResources) since 2027-01-15T08:00:00Z:",
        "  gang ns/big: 1 of 2 members cannot be placed: Insufficient cpu",
        "  backing off until 2027-01-15T08:00:30Z",
        "  2 pending asking cpu 6: one fits on 1 node now (unreserved capacity)",
        "  queue default: allocated nothing; deserves cpu 12 (share 0.00)",
    ]
    assert from_group(group([]))[-1] == "no condition yet: Lahar has not been asked about its pods"


def test_the_other_kinds_say_why_from_their_event_or_lahars_condition() -> None:
    meta = {"name": "big", "namespace": "ns", "annotations": {}}
    cosched = {"metadata": meta, "spec": {"minMember": 2}, "status": {"phase": "Scheduling"}}
    event = {"reason": "Unschedulable", "message": SUMMARY, "lastTimestamp": "2027-01-15T08:00:00Z"}
    lines = from_coscheduling_group(cosched, event)
    assert lines[:3] == [
        "phase Scheduling: 0 running, 0 succeeded, 0 failed of minMember 2 (queue default)",
        "Unschedulable at 2027-01-15T08:00:00Z:",
        "  gang ns/big: 1 of 2 members cannot be placed: Insufficient cpu",
    ]
    assert from_coscheduling_group(cosched, None)[-1].startswith("no Warning event about it")
    condition = {
        "type": "lahar.io/GangScheduled",
        "status": "False",
        "reason": "NotEnoughResources",
        "message": SUMMARY,
        "lastTransitionTime": "2027-01-15T08:00:00Z",
    }
    kube_schedulers = {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "X"}
    native = {
        "metadata": {**meta, "annotations": {"scheduling.volcano.sh/queue-name": "ml"}},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        "status": {"conditions": [kube_schedulers, condition]},
    }
    assert from_native_group(native)[:3] == [
        "gang minCount 2 (queue ml)",
        "lahar.io/GangScheduled=False (NotEnoughResources) since 2027-01-15T08:00:00Z:",
        "  gang ns/big: 1 of 2 members cannot be placed: Insufficient cpu",
    ]


@pytest.mark.parametrize(
    ("given", "wanted"),
    [
        ("tf", (None, "tf")),
        ("job/tf", ("Job", "tf")),
        ("pg/tf", ("PodGroup", "tf")),
        ("podgroups.scheduling.x-k8s.io/tf", (GroupKind.COSCHEDULING.value, "tf")),
        ("podgroups.scheduling.k8s.io/tf", (GroupKind.NATIVE.value, "tf")),
        ("pod/tf-0", ("Pod", "tf-0")),
        ("po/tf-0", ("Pod", "tf-0")),
    ],
)
def test_explain_takes_each_kind_by_kubectls_name(given: str, wanted: tuple[Any, str]) -> None:
    assert target(given) == wanted


def test_the_text_names_the_job_the_source_and_what_the_scheduler_said_of_each_pod() -> None:
    pending = {
        "metadata": {"name": "big-1"},
        "spec": {},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/2 nodes are available: 2 gang ns/big waits.",
                }
            ],
        },
    }
    placed = {"metadata": {"name": "big-0"}, "spec": {"nodeName": "n1"}, "status": {}}
    answer = {
        "gang": "ns/big",
        "job": "tf",
        "phase": "Pending",
        "source": "PodGroup status written by Lahar's extender",
        "lines": ["why"],
        "pods": [pod_row(placed), pod_row(pending)],
    }
    assert text(answer) == [
        "PodGroup ns/big (Job tf): Pending",
        "From the PodGroup status written by Lahar's extender:",
        "  why",
        "Pods:",
        "  NAME    PHASE     NODE",
        "  big-0   Pending   n1",
        "  big-1   Pending   <none>",
        "kube-scheduler of big-1: 0/2 nodes are available: 2 gang ns/big waits.",
    ]


def test_a_pending_jobs_group_without_pods_says_when_they_come() -> None:
    answer = {"gang": "ns/big", "job": "tf", "phase": "Pending", "source": "", "lines": []}
    assert text({**answer, "pods": []}) == [
        "PodGroup ns/big (Job tf): Pending",
        "No pods yet: the Job's controller creates them once Lahar admits the gang",
    ]
    assert text({**answer, "job": None, "pods": []}) == ["PodGroup ns/big: Pending"]


@pytest.mark.parametrize(
    ("url", "cert", "key", "error"),
    [
        ("file:///etc/passwd", None, None, "expected an http:// or https:// URL"),
        ("https://127.0.0.1:1", None, Path("k.pem"), "--key needs --cert"),
        ("https://127.0.0.1:1", Path("/nonexistent.pem"), None, "--cert/--key/--cacert:"),
        ("http://127.0.0.1:1", None, None, "http://127.0.0.1:1/debug/explain?gang=ns%2Fbig: "),
    ],
)
def test_a_bad_extender_address_or_certificate_is_named(
    url: str, cert: Path | None, key: Path | None, error: str
) -> None:
    with pytest.raises(KubeError, match=error.replace("?", r"\?").replace("+", r"\+")):
        from_extender(Extender(url, cert, key), "ns/big")


V, C, N = (BY_KIND[kind] for kind in (GroupKind.VOLCANO, GroupKind.COSCHEDULING, GroupKind.NATIVE))
WINS = (
    "a pod joins one PodGroup, the one named by the first of the annotation, the label or "
    "spec.schedulingGroup it carries (the webhook refuses a pod that names two)"
)


@pytest.mark.parametrize(
    ("naming", "exists", "said"),
    [
        (
            [(C, "p")],
            True,
            [
                "pod ml/p-0 waits for the Coscheduling PodGroup ml/p, named by its label "
                "scheduling.x-k8s.io/pod-group"
            ],
        ),
        (
            [(V, "p"), (C, "p")],
            False,
            [
                "pod ml/p-0 waits for the Volcano PodGroup ml/p, named by its annotation "
                "scheduling.k8s.io/group-name, which wins over its label "
                f"scheduling.x-k8s.io/pod-group naming the Coscheduling PodGroup ml/p: {WINS}",
                "the Volcano PodGroup ml/p does not exist: the pod waits until it is made",
            ],
        ),
        (
            [(C, "a"), (N, "b")],
            True,
            [
                "pod ml/p-0 waits for the Coscheduling PodGroup ml/a, named by its label "
                "scheduling.x-k8s.io/pod-group, which wins over its "
                f"spec.schedulingGroup.podGroupName naming the native PodGroup ml/b: {WINS}"
            ],
        ),
    ],
    ids=["one-field", "annotation-wins-missing-group", "label-wins"],
)
def test_a_pod_is_told_its_group_the_field_and_why(
    naming: Any, exists: bool, said: list[str]
) -> None:
    assert pod_group_lines("ml/p-0", naming, exists=exists) == said


def test_the_text_says_the_pod_asked_about_first_and_the_naming_after_the_status() -> None:
    answer = {
        "pod": ["pod ml/p-0 waits for the Volcano PodGroup ml/p"],
        "gang": "ml/p",
        "job": None,
        "phase": "NotFound",
        "source": "pod ml/p-0",
        "lines": [],
        "naming": ["pods ml/p-0 join this group by annotation"],
        "pods": [],
    }
    assert text(answer) == [
        "pod ml/p-0 waits for the Volcano PodGroup ml/p",
        "PodGroup ml/p: NotFound",
        "pods ml/p-0 join this group by annotation",
    ]
