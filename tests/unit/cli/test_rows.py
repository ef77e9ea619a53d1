"""The resource commands' pure parts: ages, tables, rows, capability parsing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from extender.cli import rows
from extender.cli.kubectl import age, table
from extender.cli.queue_cmd import capability

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("stamp", "shown"),
    [
        ("2026-11-24T11:59:15Z", "45s"),
        ("2026-11-24T11:58:30Z", "90s"),  # seconds up to two minutes
        ("2026-11-24T11:54:30Z", "5m30s"),  # minutes and seconds up to ten
        ("2026-11-24T11:48:00Z", "12m"),
        ("2026-11-24T09:00:01Z", "179m"),  # minutes up to three hours
        ("2026-11-24T09:00:00Z", "3h"),
        ("2026-11-24T06:30:00Z", "5h30m"),
        ("2026-11-22T13:00:00Z", "47h"),  # hours up to two days
        ("2026-11-22T12:00:00Z", "2d"),
        ("2026-11-20T09:00:00Z", "4d3h"),
        ("2023-11-20T12:00:00Z", "3y5d"),
        ("2016-11-24T12:00:00Z", "10y"),
        ("2026-11-24T12:00:01Z", "0s"),  # a second ahead: clocks differ
        ("2026-11-24T12:00:05Z", "<invalid>"),
        (None, "<unknown>"),
    ],
)
def test_age_reads_like_kubectl(stamp: str | None, shown: str) -> None:
    assert age(stamp, NOW) == shown


def test_a_table_aligns_its_columns() -> None:
    assert table(("NAME", "N"), [["a", "10"], ["long-name", "2"]]).splitlines() == [
        "NAME        N",
        "a           10",
        "long-name   2",
    ]
    assert table(("NAME",), []) == ""


def test_a_job_row_reads_its_status_with_defaults() -> None:
    job = {
        "metadata": {"name": "tf", "namespace": "ml", "creationTimestamp": "2026-11-24T11:00:00Z"},
        "spec": {"minAvailable": 3, "queue": "research"},
        "status": {"state": {"phase": "Running", "reason": "x"}, "running": 3, "version": 1},
    }
    assert rows.job_row(job, namespaced=True, wide=True, now=NOW) == [
        "ml",
        "tf",
        "Running",
        "3",
        "0",
        "3",
        "0",
        "0",
        "0",
        "research",
        "60m",  # (kubectl counts minutes up to three hours)
        "1",
        "x",
    ]
    bare = {"metadata": {"name": "new"}}
    assert rows.job_row(bare, namespaced=False, wide=False, now=NOW)[:3] == ["new", "Pending", "0"]


def test_a_podgroup_row_shows_its_latest_condition_when_wide() -> None:
    group = {
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {"minMember": 4},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "Scheduled",
                    "status": "False",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                },
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "lastTransitionTime": "2026-02-01T00:00:00Z",
                    "message": "gang ml/g: 3 of 4 fit",
                },
            ],
        },
    }
    row = rows.group_row(group, namespaced=False, wide=True, now=NOW)
    assert row[-2:] == ["Unschedulable=True", "gang ml/g: 3 of 4 fit"]


def test_a_queue_row_defaults_to_open() -> None:
    queue = {
        "metadata": {"name": "q"},
        "spec": {"weight": 2, "reclaimable": False},
        "status": {"allocated": {"cpu": "2", "memory": "1Gi"}},
    }
    assert rows.queue_row(queue, wide=True, now=NOW) == [
        "q",
        "2",
        "Open",
        "0",
        "0",
        "0",
        "0",
        "cpu=2,memory=1Gi",
        "-",
        "-",
        "<unknown>",
        "-",
        "false",
    ]


def _queue(name: str, parent: str = "", allocated: str = "0", deserved: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"allocated": {"cpu": allocated}}
    if deserved:
        status["deserved"] = {"cpu": deserved}
    return {"metadata": {"name": name}, "spec": {"parent": parent}, "status": status}


@pytest.mark.parametrize(
    ("queues", "names", "shares"),
    [
        (  # flat: by name, nothing indented
            [_queue("b", deserved="4"), _queue("a", allocated="2", deserved="4")],
            ["a", "b"],
            ["0.50", "0.00"],
        ),
        (  # a tree: each child under its parent, siblings by name, two spaces a level
            [
                _queue("team-b", "ml", allocated="6", deserved="4"),
                _queue("web", allocated="1", deserved="4"),
                _queue("ml", "root", allocated="8", deserved="12"),
                _queue("team-a", "ml", allocated="2", deserved="8"),
                _queue("x", "team-a"),
            ],
            ["ml", "  team-a", "    x", "  team-b", "web"],
            ["0.67", "0.25", "-", "1.50", "0.25"],
        ),
        (  # a root Queue is listed at the top, the others under it
            [_queue("root", allocated="3", deserved="8"), _queue("q", allocated="3", deserved="8")],
            ["root", "  q"],
            ["0.38", "0.38"],
        ),
        (  # a queue whose parent is missing is listed at the top level
            [_queue("orphan", "gone", deserved="1")],
            ["orphan"],
            ["0.00"],
        ),
    ],
)
def test_queues_are_listed_as_their_tree_with_their_share(
    queues: list[dict[str, Any]], names: list[str], shares: list[str]
) -> None:
    listed = rows.queue_rows(queues, now=NOW)
    share_at = rows.QUEUE_HEADERS.index("SHARE")
    assert [row[0] for row in listed] == names
    assert [row[share_at] for row in listed] == shares


@pytest.mark.parametrize(
    ("text", "error"),
    [("cpu", "'cpu' is not NAME=QUANTITY"), ("cpu=lots", "cpu: invalid quantity 'lots'")],
)
def test_a_bad_capability_is_named(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        capability(text)


def test_a_capability_parses() -> None:
    assert capability("cpu=8, memory=16Gi") == {"cpu": "8", "memory": "16Gi"}
    assert capability("") == {}
