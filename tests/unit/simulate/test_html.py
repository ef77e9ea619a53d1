"""The HTML report: one self-contained page with the table and three plots."""

from __future__ import annotations

import re
from pathlib import Path

from extender.simulate import html
from extender.simulate.defaults import stock_policy, story_trace
from extender.simulate.run import simulate
from extender.simulate.summary import summarize
from extender.simulate.trace import parse_trace


def test_the_report_embeds_the_table_and_its_plots(tmp_path: Path) -> None:
    outcome = simulate(story_trace(), stock_policy(), "stock")
    path = html.write(tmp_path / "deep" / "story.html", [outcome], [summarize(outcome)])
    page = path.read_text()
    assert path == tmp_path / "deep" / "story.html"
    assert "<td>stock</td>" in page
    assert "<td>never</td>" in page
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 3
    assert all(len(image) > 1000 for image in images)
    assert "http" not in page  # nothing to fetch: it opens offline


def test_a_tree_of_queues_adds_the_shares_per_level_and_a_plot_per_level(tmp_path: Path) -> None:
    task = {"name": "w", "replicas": 1, "cpu": "1", "memory": "1Gi", "duration": 10}
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "2", "memory": "8Gi"}],
            "queues": [
                {"name": "ml", "weight": 3},
                {"name": "team-a", "weight": 2, "parent": "ml"},
                {"name": "team-b", "parent": "ml"},
                {"name": "web"},
            ],
            "jobs": [
                {"name": f"{queue}-{i}", "queue": queue, "arrival": i, "tasks": [task]}
                for queue in ("team-a", "team-b", "web")
                for i in range(4)
            ],
        }
    )
    outcome = simulate(trace, stock_policy(), "stock")
    page = html.write(tmp_path / "tree.html", [outcome], [summarize(outcome)]).read_text()
    assert "root/ml/team-a (weight 2)" in page
    assert "<h2>Shares per level of the queue tree</h2>" in page
    assert "<td>root/ml/team-b</td>" in page
    assert "<h2>CPU per level of the queue tree</h2>" in page
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 4
