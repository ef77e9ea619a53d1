"""`lahar explain`'s pure parts: the PodGroup's summary split back into lines, the printed text,
and errors that name the flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.cli.explain_cmd import Extender, from_extender, from_group, pod_row, text
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
