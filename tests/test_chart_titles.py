"""Issue 20 item 14: a chart's title stays once a benchmark has run. The series names were appended to
the title line; at 80×24 and 60×20 (and for one chart at 200×50) the line was longer than the chart
and plotext cut the title away. The real app over a recording with benchmarks, painted."""

from __future__ import annotations

import pytest

from eagletui.ui.widgets.charts import MetricChart, fit_title
from tests.replay_apps import replayed


def test_fit_title_keeps_the_title_and_drops_legend_entries_from_the_end() -> None:
    names = ["• per request", "─ rolling", "┄ baseline"]
    assert fit_title("TTFT", names, 200) == "TTFT   • per request  ─ rolling  ┄ baseline"
    assert fit_title("TTFT", names, 30) == "TTFT   • per request"
    assert fit_title("output tok/s (aggregate)", names, 20) == "output tok/s (aggre…"
    assert fit_title("TTFT", [], 3) == "TT…"


@pytest.mark.slow
@pytest.mark.parametrize("size", [(200, 50), (80, 24), (60, 20)])
async def test_every_chart_title_shows_after_a_benchmark(size: tuple[int, int]) -> None:
    async with replayed(size) as (app, pilot):
        narrow = app.main.narrow
        if narrow:
            await pilot.press("2")
            await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        charts = [c for c in app.query(MetricChart) if c.has_class("in-tab") == narrow]
        assert len(charts) == (4 if narrow else 5) and app.state.bench_results  # the frontier: wide only
        drawn = [c for c in charts if c.points > 0]  # with data: the legend is there to push the title out
        assert len(drawn) >= 3
        for chart in drawn:
            text = "\n".join(chart.render_line(y).text for y in range(chart.size.height))
            assert chart.title in text, (size, chart.title, text[:400])
