"""The HTML report: one self-contained page with the table and three plots."""

from __future__ import annotations

import re
from pathlib import Path

from extender.simulate import html
from extender.simulate.defaults import stock_policy, story_trace
from extender.simulate.run import simulate
from extender.simulate.summary import summarize


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
