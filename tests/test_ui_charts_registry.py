"""The charts registry (ui/widgets/charts.py CHARTS): one tuple makes both compose sites, the wide
grid's rows and the repaint's round-robin, so a new chart is its class and one line."""

from __future__ import annotations

import pytest

from eagletui.core.state.screen import SessionState
from eagletui.ui import repaint
from eagletui.ui.widgets import charts
from eagletui.ui.widgets.charts import CHARTS, ChartSpec, MetricChart
from tests.replay_apps import replayed


class DecodeTokSChart(MetricChart):
    """A chart that is not shipped: the server's own decode throughput alone."""

    def __init__(self, **kwargs) -> None:
        super().__init__("server decode tok/s", "tok/s", "chart-toks", **kwargs)

    def series_for(self, state: SessionState):
        return None, None, state.gen_throughput


def test_the_shipped_registry() -> None:
    assert [c.key for c in CHARTS] == ["toks", "accept", "req", "ttft", "frontier"]
    assert charts.wide_grid_rows() == "1fr 1fr 1fr 1fr" and charts.tab_grid_rows() == "1fr 1fr"
    assert repaint.charts_shown() == 5


@pytest.mark.slow
async def test_one_line_in_the_registry_puts_a_chart_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts, "CHARTS", (*CHARTS, ChartSpec(DecodeTokSChart, "decode", wide=True)))
    assert repaint.charts_shown() == 6 and charts.wide_grid_rows() == "1fr 1fr 1fr 1fr 1fr"
    async with replayed((200, 50)) as (app, pilot):
        screen = app.screen
        wide = screen.query_one("#chart-decode-wide", DecodeTokSChart)
        tab = screen.query_one("#chart-decode", DecodeTokSChart)
        assert wide.has_class("wide") and tab.has_class("in-tab")
        grid = screen.query_one("#wide-charts")
        assert len(grid.styles.grid_rows) == 5
        # the repaint gives it its turn like the shipped ones: it plotted the replayed decode lines
        screen.painter.force_charts = True
        screen.painter.dirty = True
        screen.painter.paint()
        await pilot.pause()
        assert wide.points > 0
