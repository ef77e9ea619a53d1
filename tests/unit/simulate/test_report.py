"""The printed shares per tree level: a row per queue with siblings, a column per run."""

from __future__ import annotations

from dataclasses import replace

from extender.simulate.report import level_notes, level_table
from extender.simulate.summary import LevelShare, Summary


def _summary(policy: str, levels: tuple[LevelShare, ...]) -> Summary:
    return Summary(policy, 1, 1, 1, 10.0, 0.0, 0.0, 0.5, 0.5, None, 0, 0, 0.1, levels)


ML = LevelShare(1, "root/ml", "root", 3, 0.75, 0.74, 600.0)
WEB = LevelShare(1, "root/web", "root", 1, 0.25, 0.26, 600.0)
TEAM_A = LevelShare(2, "root/ml/team-a", "root/ml", 2, 2 / 3, None, 0.0)


def test_each_queue_a_row_each_policy_a_column_of_shares() -> None:
    lahar = _summary("lahar", (ML, WEB, TEAM_A))
    stock = _summary("stock", (replace(ML, share=0.5), replace(WEB, share=0.5, saturated=90.0)))
    headers, rows = level_table([lahar, stock])
    assert headers == ("LEVEL", "QUEUE", "WEIGHT", "FAIR", "LAHAR", "STOCK")
    assert rows == [
        ("1", "root/ml", "3", "75%", "74%", "50%"),
        ("1", "root/web", "1", "25%", "26%", "50%"),
        ("2", "root/ml/team-a", "2", "67%", "-", "-"),  # (never saturated; not in stock's)
    ]
    (note,) = level_notes([lahar, stock])
    assert note.endswith("Saturated: lahar root 10.0m, root/ml 0s; stock root 1.5m")


def test_a_flat_trace_prints_no_shares_per_level() -> None:
    assert level_table([_summary("lahar", ())])[1] == []
    assert level_notes([_summary("lahar", ())]) == []


def test_a_queue_whose_weight_the_runs_differ_in_shows_both() -> None:
    """`lahar whatif --queue web.weight=3` plays the cluster as it is beside the edit: the row
    says the weight and the fair share of each run."""
    before = _summary("as is", (ML, WEB))
    after = _summary("web.weight=3", (replace(ML, fair=0.5), replace(WEB, weight=3, fair=0.5)))
    assert level_table([before, after])[1] == [
        ("1", "root/ml", "3", "75% -> 50%", "74%", "74%"),
        ("1", "root/web", "1 -> 3", "25% -> 50%", "26%", "26%"),
    ]
